package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/bench/sidecar"
)

var (
	buildOnce sync.Once
	binDir    string
	bin       string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// sidecarBinary builds cmd/sidecar once for the tests of this package.
func sidecarBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "memgate-bench-bin-"); buildErr == nil {
			bin, buildErr = sidecar.Build(context.Background(), binDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load"}, "give -target"},
		{[]string{"load", "-target", "http://x", "-sidecar", "y"}, "give -target"},
		{[]string{"load", "-target", "http://x", "-mix", "write"}, "kind=weight"},
		{[]string{"load", "-target", "http://x", "extra"}, "no arguments"},
		{[]string{"crash"}, "-sidecar is required"},
		{[]string{"footprint"}, "-sidecar is required"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, _, err := runCmd(t); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("no subcommand: %v, want help", err)
	}
}

// TestLoadDrivesTheBinary runs the load tool end to end: it starts the real
// sidecar, drives both dialects and measures the baseline beside it.
func TestLoadDrivesTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	out, logs, err := runCmd(t, "load", "-sidecar", sidecarBinary(t), "-rate", "100", "-concurrency", "4",
		"-duration", "600ms", "-warmup", "100ms", "-subjects", "4", "-mix", "write=6,override=2,read=1,search=1")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	t.Log("\n" + out)
	for _, want := range []string{"memgate: native", "baseline: native", "override", "search", "memgate/baseline (low-risk writes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "failures:") {
		t.Errorf("calls failed:\n%s", out)
	}

	out, logs, err = runCmd(t, "load", "-sidecar", sidecarBinary(t), "-dialect", "mem0", "-rate", "60", "-concurrency", "2",
		"-duration", "500ms", "-warmup", "0", "-subjects", "2", "-mix", "write=3,read=1,search=1", "-baseline=false", "-json")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	var res struct {
		Dialect string
		Kinds   map[string]struct{ Calls, OK int }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("-json output %q: %v", out, err)
	}
	if res.Dialect != "mem0" || res.Kinds["write"].OK == 0 || res.Kinds["write"].OK != res.Kinds["write"].Calls {
		t.Fatalf("mem0 run: %+v", res)
	}
}

func TestCrashAndFootprintCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	out, logs, err := runCmd(t, "crash", "-sidecar", sidecarBinary(t), "-cycles", "2", "-writers", "2", "-reviewers", "1",
		"-min-uptime", "300ms", "-max-uptime", "500ms", "-seed", "3")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, logs)
	}
	for _, want := range []string{"cycles run: 2 (seed 3", "items lost: 0", "slots with two active records: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("crash output lacks %q:\n%s", want, out)
		}
	}
	out, logs, err = runCmd(t, "footprint", "-sidecar", sidecarBinary(t), "-records", "0", "-settle", "100ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if !strings.Contains(out, "empty data directory: ready in") || strings.Contains(out, "records loaded") {
		t.Errorf("footprint output:\n%s", out)
	}
}

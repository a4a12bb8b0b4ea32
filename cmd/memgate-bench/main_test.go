package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/bench/sidecar/sidecartest"
)

// sidecarBin is cmd/sidecar, built once for the tests of this package.
var sidecarBin = sidecartest.New("memgate-bench-bin-")

func TestMain(m *testing.M) {
	code := m.Run()
	sidecarBin.Remove()
	os.Exit(code)
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
		{[]string{"load", "-sidecar", "x", "-instances", "2"}, "need -store or -pg-cluster"},
		{[]string{"load", "-target", "http://x", "-baseline-only"}, "need -store or -pg-cluster"},
		{[]string{"load", "-sidecar", "x", "-store", "mysql://db"}, "postgres:// or postgresql://"},
		{[]string{"load", "-sidecar", "x", "-store", "postgres://db", "-pg-cluster"}, "not both"},
		{[]string{"load", "-target", "http://x", "-store", "postgres://db"}, "starts the fleet itself"},
		{[]string{"load", "-store", "postgres://db"}, "-sidecar BIN is required"},
		{[]string{"load", "-sidecar", "x", "-store", "postgres://db", "-baseline-only"}, "drop -sidecar"},
		{[]string{"load", "-sidecar", "x", "-store", "postgres://db", "-instances", "1,0"}, "from 1 to 64"},
		{[]string{"load", "-sidecar", "/nonexistent/sidecar", "-store", "postgres://db"}, "--help"},
		{[]string{"crash", "-sidecar", "x", "-instances", "2"}, "needs -store or -pg-cluster"},
		{[]string{"crash", "-sidecar", "x", "-store", "postgres://db", "-kill", "some"}, "want one or all"},
		{[]string{"crash", "-sidecar", "x", "-store", "postgres://db", "-restart-db-every", "2"}, "needs -pg-cluster"},
		{[]string{"crash", "-sidecar", "x", "-store", "http://db"}, "postgres:// or postgresql://"},
		{[]string{"crash", "-sidecar", "x", "-pg-cluster", "-restart-db-under-load"}, "needs -restart-db-every"},
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
	out, logs, err := runCmd(t, "load", "-sidecar", sidecarBin.Path(t), "-rate", "100", "-concurrency", "4",
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

	out, logs, err = runCmd(t, "load", "-sidecar", sidecarBin.Path(t), "-dialect", "mem0", "-rate", "60", "-concurrency", "2",
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
	out, logs, err := runCmd(t, "crash", "-sidecar", sidecarBin.Path(t), "-cycles", "2", "-writers", "2", "-reviewers", "1",
		"-min-uptime", "300ms", "-max-uptime", "500ms", "-seed", "3")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, logs)
	}
	for _, want := range []string{"cycles run: 2 (seed 3", "items lost: 0", "slots with two active records: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("crash output lacks %q:\n%s", want, out)
		}
	}
	out, logs, err = runCmd(t, "footprint", "-sidecar", sidecarBin.Path(t), "-records", "0", "-settle", "100ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if !strings.Contains(out, "empty data directory: ready in") || strings.Contains(out, "records loaded") {
		t.Errorf("footprint output:\n%s", out)
	}
}

func TestParseInstances(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"1,2,4", []int{1, 2, 4}},
		{" 4 , 2", []int{4, 2}},
		{"0", nil},
		{"2,", nil},
		{"65", nil},
		{"two", nil},
	} {
		got, err := parseInstances(tc.in)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("parseInstances(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestFleetModesRefuseASidecarWithoutStore: a sidecar binary older than
// --store (here a script whose --help lacks it) is refused by the fleet
// modes before they start anything.
func TestFleetModesRefuseASidecarWithoutStore(t *testing.T) {
	old := filepath.Join(t.TempDir(), "sidecar")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'USAGE\n  sidecar serve [--data-dir D]'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"load", "crash"} {
		_, _, err := runCmd(t, cmd, "-sidecar", old, "-store", "postgres://127.0.0.1:1/none", "-instances", "2")
		if err == nil || !strings.Contains(err.Error(), "has no --store flag") {
			t.Errorf("%s: err = %v, want the missing --store explained", cmd, err)
		}
	}
}

// TestFleetLoadOnACluster runs the fleet load end to end on a throwaway
// PostgreSQL cluster: fresh databases, 1 and 2 real sidecars on one
// database against 1 and 2 bare PostgreSQL handlers, and the table by
// fleet size.
func TestFleetLoadOnACluster(t *testing.T) {
	needPostgres(t)
	bin := sidecarBin.Path(t)
	out, logs, err := runCmd(t, "load", "-sidecar", bin, "-pg-cluster", "-instances", "1,2", "-rate", "0", "-concurrency", "4",
		"-duration", "500ms", "-warmup", "100ms", "-subjects", "4")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, logs)
	}
	t.Log("\n" + out)
	for _, want := range []string{"== 1 instance(s)", "== 2 instance(s)", "2 bare PostgreSQL handlers",
		"memgate/baseline (low-risk writes vs 2 bare PostgreSQL handlers", "low-risk writes by fleet size"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "failures:") {
		t.Errorf("calls failed:\n%s", out)
	}
	if !strings.Contains(logs, "started 2 sidecars on one database") {
		t.Errorf("logs do not show the fleet starting:\n%s", logs)
	}

	out, logs, err = runCmd(t, "load", "-pg-cluster", "-baseline-only", "-instances", "2", "-rate", "0", "-concurrency", "4",
		"-duration", "300ms", "-warmup", "0", "-json")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	var runs []struct {
		Instances int
		Memgate   *json.RawMessage
		Baseline  struct {
			Target string
			Kinds  map[string]struct{ Calls, OK int }
		}
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("-json output %q: %v", out, err)
	}
	if len(runs) != 1 || runs[0].Instances != 2 || runs[0].Memgate != nil || strings.Count(runs[0].Baseline.Target, ",") != 1 {
		t.Fatalf("baseline-only run: %+v", runs)
	}
	if w := runs[0].Baseline.Kinds["write"]; w.OK == 0 || w.OK != w.Calls {
		t.Fatalf("baseline writes: %+v", w)
	}
}

// TestFleetCrashOnACluster runs the crash command's fleet mode: two real
// sidecars on one database, both killed (-9) each cycle and PostgreSQL
// restarted (immediate) after each: nothing acknowledged lost, one active
// version per slot.
func TestFleetCrashOnACluster(t *testing.T) {
	needPostgres(t)
	bin := sidecarBin.Path(t)
	out, logs, err := runCmd(t, "crash", "-sidecar", bin, "-pg-cluster", "-instances", "2", "-kill", "all", "-restart-db-every", "1",
		"-cycles", "2", "-writers", "2", "-reviewers", "1", "-min-uptime", "300ms", "-max-uptime", "400ms", "-seed", "4")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, logs)
	}
	for _, want := range []string{"cycles run: 2 (seed 4", "instances: 2 sharing one postgres database; database restarts: 2",
		"items lost: 0", "slots with two active records: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("crash output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(logs, "killed instance(s) [0 1] of 2"); got != 2 {
		t.Errorf("%d cycles killed both instances, want 2:\n%s", got, logs)
	}
}

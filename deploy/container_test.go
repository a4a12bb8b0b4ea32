//go:build linux

package deploy_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
)

// TestContainerEntrypoint runs the binary as the image would: built with
// the Dockerfile's go build command, started with its ENTRYPOINT, ENV and
// USER (when the test runs as root), on a temporary directory standing for
// the volume. No Docker engine runs in CI and no daemonless builder can
// fetch the base images offline, so this is how the image is checked.
func TestContainerEntrypoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the sidecar")
	}
	_, stages := parseDockerfile(t, "Dockerfile")
	build, final := stages[0], stages[len(stages)-1]
	env := dockerEnv(t, final)
	argv := entrypoint(t, final)

	// Build as the build stage does, to where the runtime stage copies from.
	volume := volumeDir(t)
	bin := filepath.Join(filepath.Dir(volume), "sidecar") // where the image's user may run it
	out := goBuild(t, build, bin)
	if !copiesTo(final, build.name, out, argv[0]) {
		t.Fatalf("the runtime stage does not copy the build's %s to the ENTRYPOINT %s", out, argv[0])
	}

	// The image's settings, with the volume and the ports remapped.
	if env["MEMGATE_DATA_DIR"] == "" || env["MEMGATE_GENERATE_AGENT_KEY"] != "true" {
		t.Fatalf("ENV %v: want MEMGATE_DATA_DIR and MEMGATE_GENERATE_AGENT_KEY=true", env)
	}
	listen := map[string]string{}
	for _, name := range []string{"MEMGATE_LISTEN", "MEMGATE_ADMIN_LISTEN"} {
		host, _, err := net.SplitHostPort(env[name])
		if err != nil || host != "0.0.0.0" {
			t.Fatalf("%s=%q: inside a container the listeners bind 0.0.0.0, so published ports reach them", name, env[name])
		}
		_, port, _ := net.SplitHostPort(freeLoopbackAddr(t))
		listen[name] = net.JoinHostPort(host, port)
	}
	var environ []string
	for k, v := range env {
		switch k {
		case "MEMGATE_DATA_DIR":
			v = volume
		case "MEMGATE_LISTEN", "MEMGATE_ADMIN_LISTEN":
			v = listen[k]
		}
		environ = append(environ, k+"="+v)
	}
	cred := runAs(t, final, volume)

	var logs testkit.SyncBuffer
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	_, adminPort, _ := net.SplitHostPort(listen["MEMGATE_ADMIN_LISTEN"])
	_, agentPort, _ := net.SplitHostPort(listen["MEMGATE_LISTEN"])
	admin := "http://127.0.0.1:" + adminPort
	waitReady(t, admin+"/readyz", &logs)

	// Both secrets are generated into the volume, readable by the image's
	// user only, and the log says where (never what).
	secrets := map[string]string{}
	for _, name := range []string{"admin.token", "agent.key"} {
		path := filepath.Join(volume, name)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s was not generated: %v\n%s", name, err, logs.String())
		}
		raw, _ := os.ReadFile(path)
		secrets[name] = strings.TrimSpace(string(raw))
		if fi.Mode().Perm() != 0o600 || (cred != nil && fi.Sys().(*syscall.Stat_t).Uid != cred.Uid) {
			t.Fatalf("%s: mode %v, owner %d", name, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
		}
		if !strings.Contains(logs.String(), path) || strings.Contains(logs.String(), secrets[name]) {
			t.Fatalf("the log must name %s and not hold its content:\n%s", path, logs.String())
		}
	}

	// The agent listener answers on a routable address, and only with the key.
	agent := "http://" + net.JoinHostPort(routableIP(t), agentPort)
	body := `{"layer":"knowledge","subjectId":"docker","summary":"the image runs with one command"}`
	for _, tc := range []struct {
		key  string
		want int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {secrets["agent.key"], http.StatusCreated}} {
		req, _ := http.NewRequest("POST", agent+"/api/v1/memories", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("write with key %q: %d, want %d", tc.key, resp.StatusCode, tc.want)
		}
	}

	// docker exec memgate sidecar review list: the CLI finds the token in
	// the volume through the image's MEMGATE_DATA_DIR.
	cli := exec.Command(bin, "review", "list", "--admin-url", admin)
	cli.Env = append(slicesWithout(environ, "MEMGATE_ADMIN_TOKEN"), "MEMGATE_DATA_DIR="+volume)
	cli.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cli.CombinedOutput(); err != nil || !strings.Contains(string(out), "No writes wait for review") {
		t.Fatalf("sidecar review list in the container: %v\n%s", err, out)
	}
}

// dockerEnv returns the runtime stage's ENV settings.
func dockerEnv(t *testing.T, s *stage) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, in := range s.all("ENV") {
		for _, kv := range strings.Fields(in.args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ENV %s: use the KEY=value form", in.args)
			}
			env[k] = strings.Trim(v, `"`)
		}
	}
	return env
}

func entrypoint(t *testing.T, s *stage) []string {
	t.Helper()
	eps := s.all("ENTRYPOINT")
	var argv []string
	if len(eps) != 1 || json.Unmarshal([]byte(eps[0].args), &argv) != nil || len(argv) == 0 {
		t.Fatalf("want one ENTRYPOINT in the exec form, got %v", eps)
	}
	return argv
}

// goBuild runs the build stage's go build command with its environment
// assignments and flags, writing to bin; it returns the -o path the
// Dockerfile names.
func goBuild(t *testing.T, s *stage, bin string) string {
	t.Helper()
	for _, run := range s.all("RUN") {
		words := shellWords(run.args)
		at := -1
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "go" && words[i+1] == "build" {
				at = i
			}
		}
		if at < 0 {
			continue
		}
		var env []string
		for _, w := range words[:at] {
			if k, _, ok := strings.Cut(w, "="); ok && k == strings.ToUpper(k) && !strings.HasPrefix(w, "-") {
				env = append(env, w)
			}
		}
		args := slices.Clone(words[at+1:])
		out := ""
		for i := range args {
			if args[i] == "-o" && i+1 < len(args) {
				out, args[i+1] = args[i+1], bin
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return out
	}
	t.Fatal("no go build in the build stage")
	return ""
}

// shellWords splits a command line on blanks, keeping double-quoted parts.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

func copiesTo(s *stage, from, src, dst string) bool {
	for _, c := range s.all("COPY") {
		f := strings.Fields(c.args)
		if strings.Contains(c.args, "--from="+from) && len(f) >= 2 && f[len(f)-2] == src && f[len(f)-1] == dst {
			return true
		}
	}
	return false
}

// runAs returns the credential of the stage's USER when the test can take
// it (as root), giving it the volume; nil runs as the test's own user.
func runAs(t *testing.T, s *stage, volume string) *syscall.Credential {
	t.Helper()
	users := s.all("USER")
	if len(users) != 1 {
		t.Fatalf("want one USER, got %v", users)
	}
	if os.Geteuid() != 0 {
		t.Logf("not root: running as uid %d instead of USER %s", os.Geteuid(), users[0].args)
		return nil
	}
	u, g, _ := strings.Cut(users[0].args, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		t.Fatalf("USER %s: want numeric uid:gid", users[0].args)
	}
	if err := os.Chown(volume, uid, gid); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// volumeDir is a directory the image's user can reach (t.TempDir is 0700
// and root's).
func volumeDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "memgate-volume-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "var-lib-memgate")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// routableIP is an address of this machine that is not loopback, where a
// listener on 0.0.0.0 answers and one on 127.0.0.1 would not; 127.0.0.1
// when there is none.
func routableIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	t.Log("no routable address here: checking the agent listener on 127.0.0.1")
	return "127.0.0.1"
}

func waitReady(t *testing.T, url string, logs *testkit.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200:\n%s", url, logs.String())
}

func slicesWithout(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

package deploy_test

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

type stage struct {
	name, from string
	body       []instruction
}

// parseDockerfile splits a Dockerfile into stages. No Docker engine runs in
// CI, so the image cannot be built there; this checks what the build relies on.
func parseDockerfile(t *testing.T, path string) (args map[string]string, stages []*stage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args = map[string]string{}
	var ins []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		cmd, rest, _ := strings.Cut(cur.String(), " ")
		ins = append(ins, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(rest), line: start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		switch {
		case in.cmd == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			s := &stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case len(stages) == 0:
			t.Fatalf("line %d: %s before the first FROM", in.line, in.cmd)
		default:
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return args, stages
}

func (s *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	args, stages := parseDockerfile(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	t.Run("static build of the sidecar", func(t *testing.T) {
		var builds []string
		for _, run := range build.all("RUN") {
			if strings.Contains(run.args, "go build") {
				builds = append(builds, run.args)
			}
		}
		if len(builds) != 1 {
			t.Fatalf("%d go build commands, want 1", len(builds))
		}
		if !strings.Contains(builds[0], "CGO_ENABLED=0") || !strings.HasSuffix(builds[0], " ./cmd/sidecar") {
			t.Fatalf("build %q: want CGO_ENABLED=0 go build ... ./cmd/sidecar", builds[0])
		}
	})

	t.Run("Go version follows go.mod", func(t *testing.T) {
		gomod, err := os.ReadFile("../go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
		if m == nil || args["GO_VERSION"] != string(m[1]) {
			t.Fatalf("ARG GO_VERSION=%s, go.mod says go %s", args["GO_VERSION"], m[1])
		}
		if !strings.HasPrefix(build.from, "golang:${GO_VERSION}") {
			t.Fatalf("build stage FROM %s, want golang:${GO_VERSION}...", build.from)
		}
	})

	t.Run("minimal non-root runtime", func(t *testing.T) {
		if final.from != "scratch" && !strings.HasPrefix(final.from, "gcr.io/distroless/static") {
			t.Fatalf("runtime FROM %s, want scratch or distroless/static", final.from)
		}
		users := final.all("USER")
		if len(users) != 1 {
			t.Fatalf("%d USER instructions in the runtime stage, want 1", len(users))
		}
		uid, gid, _ := strings.Cut(users[0].args, ":")
		for _, id := range []string{uid, gid} {
			if n, err := strconv.Atoi(id); err != nil || n <= 0 {
				t.Fatalf("USER %s: want numeric non-zero uid:gid, so runAsNonRoot can verify it", users[0].args)
			}
		}
		if uid != "65532" {
			t.Fatalf("uid %s, want 65532 as the Kubernetes manifests assume", uid)
		}
	})

	t.Run("entrypoint is the copied binary", func(t *testing.T) {
		eps := final.all("ENTRYPOINT")
		if len(eps) != 1 {
			t.Fatalf("%d ENTRYPOINT instructions, want 1", len(eps))
		}
		var argv []string
		if err := json.Unmarshal([]byte(eps[0].args), &argv); err != nil || len(argv) == 0 {
			t.Fatalf("ENTRYPOINT %s: want the exec form (a JSON array); there is no shell", eps[0].args)
		}
		copied := false
		for _, c := range final.all("COPY") {
			f := strings.Fields(c.args)
			if strings.Contains(c.args, "--from="+build.name) && f[len(f)-1] == argv[0] {
				copied = true
			}
		}
		if build.name == "" || !copied {
			t.Fatalf("ENTRYPOINT %s is not a file copied from the build stage %q", argv[0], build.name)
		}
	})

	t.Run("ports", func(t *testing.T) {
		exposed := ""
		for _, e := range final.all("EXPOSE") {
			exposed += " " + e.args
		}
		if !strings.Contains(exposed, "7600") || !strings.Contains(exposed, "7601") {
			t.Fatalf("EXPOSE%s, want 7600 and 7601", exposed)
		}
	})
}

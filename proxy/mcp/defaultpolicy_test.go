package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
)

// With memgate's built-in default policy, graph writes get the two-tier
// treatment: a plain fact applies, a strategy constraint stated as an
// observation waits for a human, a secret is rejected.
func TestDefaultPolicyGovernsGraphWrites(t *testing.T) {
	st := badgertest.New(t)
	cls := policy.New(policy.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := cls.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer cls.Close(context.Background())
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: cls})
	srv := NewServer(gov, Options{})
	defer srv.Close()
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	cs := (&env{t: t, gov: gov, srv: srv, http: hs}).connect("openclaw", nil)

	res := call(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{
		"name": "project-alpha", "entityType": "project", "observations": []string{
			"the team ships on Fridays",
			"auto publish is allowed for project alpha",
			"the deploy password is hunter2-hunter2",
		}}}})
	outcomes := map[string]string{}
	for _, w := range writesOf(t, res) {
		outcomes[w.What] = w.Outcome
	}
	t.Logf("outcomes: %v\n%s", outcomes, text(res))
	want := map[string]string{
		`entity "project-alpha" of type "project"`:                                          outApplied,
		`observation "the team ships on Fridays" of entity "project-alpha"`:                 outApplied,
		`observation "auto publish is allowed for project alpha" of entity "project-alpha"`: outParked,
		proxy.Withheld: outRejected, // a refused write's text is never echoed back
	}
	for what, o := range want {
		if outcomes[what] != o {
			t.Errorf("%s: %q, want %q", what, outcomes[what], o)
		}
	}
	if !res.IsError || !strings.Contains(text(res), "NOT SAVED YET") || !strings.Contains(text(res), "rule secret") {
		t.Errorf("answer does not report the parked and the rejected write: %s", text(res))
	}
	a, _ := readGraphOf(t, cs).entity("project-alpha")
	if len(a.Observations) != 1 || a.Observations[0] != "the team ships on Fridays" {
		t.Errorf("graph shows %+v, want only the applied observation", a)
	}
}

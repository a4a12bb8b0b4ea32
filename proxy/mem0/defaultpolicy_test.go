package mem0

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
)

// defaultPolicy opens memgate's built-in default policy.
func defaultPolicy(t *testing.T) *policy.Classifier {
	t.Helper()
	cls := policy.New(policy.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := cls.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cls.Close(context.Background()) })
	return cls
}

// With the built-in default policy, Mem0 writes get the two-tier
// treatment: a plain fact applies, a strategy constraint waits for a human
// (and its event succeeds on approval), a secret is refused, and deleting
// the approved constraint waits for a human again.
func TestDefaultPolicyGovernsMem0Writes(t *testing.T) {
	e := newPolicyEnv(t, defaultPolicy(t))
	fact := e.add("I live in Lisbon")
	if fact["status"] != statusSucceeded || len(fact["results"].([]any)) != 1 {
		t.Fatalf("a plain fact applies: %v", fact)
	}
	rule := e.add("Never auto-publish posts for project alpha without my approval")
	if rule["status"] != statusPending || len(rule["results"].([]any)) != 1 {
		t.Fatalf("a strategy constraint waits: %v", rule)
	}
	secret := e.add("the deploy password is hunter2-hunter2")
	if refused := secret["refused"].([]any); len(refused) != 1 || len(secret["results"].([]any)) != 1 {
		t.Fatalf("a secret is refused: %v", secret)
	}

	q := e.pending()
	if len(q) != 1 || q[0].Record.Layer != memory.LayerPolicy || q[0].Record.Scope.UserID != "alice" {
		t.Fatalf("review queue: %+v", q)
	}
	e.approveAll()
	ev := e.call("GET", "/v1/event/"+rule["event_id"].(string)+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusSucceeded {
		t.Fatalf("the constraint's event after approval: %v", ev)
	}
	found := e.call("POST", "/v3/memories/search/", map[string]any{"query": "auto-publish project alpha",
		"filters": map[string]any{"user_id": "alice"}}, http.StatusOK).obj()["results"].([]any)
	if len(found) == 0 || found[0].(map[string]any)["memory"] != "Never auto-publish posts for project alpha without my approval" {
		t.Fatalf("the approved constraint is recalled: %v", found)
	}
	id := found[0].(map[string]any)["id"].(string)
	upd := e.call("PUT", "/v1/memories/"+id+"/", map[string]any{"text": "Auto-publish posts for project alpha freely"}, http.StatusOK).obj()
	if msg, _ := upd["message"].(string); upd["status"] != statusPending || !strings.HasPrefix(msg, "NOT UPDATED YET: ") ||
		len(upd["results"].([]any)) != 1 || upd["results"].([]any)[0].(map[string]any)["event"] != proxy.EventPendingReview {
		t.Fatalf("updating the constraint waits, and says so: %v", upd)
	}
	del := e.call("DELETE", "/v1/memories/"+id+"/", nil, http.StatusOK).obj()
	if msg, _ := del["message"].(string); del["status"] != statusPending || !strings.HasPrefix(msg, "NOT DELETED YET: ") {
		t.Fatalf("deleting the constraint waits, and says so: %v", del)
	}
}

package mem0

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/relate"
)

// scriptedModel is one OpenAI-compatible chat-completions server that
// plays both of the extractor's parts, as one model behind
// --extractor-url would: extraction (it answers each user message as one
// fact: a scripted extractor, not a model's judgement) and the update
// step (it answers with relate's answer to the question).
type scriptedModel struct {
	relate  func(fact string, memories map[string]string) string // memories: id → text
	status  atomic.Int64                                         // when set, the update step answers this status
	related atomic.Int64                                         // questions of the update step
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	user := req.Messages[1].Content
	var content string
	var q struct {
		Memory []struct {
			ID, Text string
		} `json:"memory"`
		NewFact string `json:"new_fact"`
	}
	if err := json.Unmarshal([]byte(user), &q); err == nil && q.NewFact != "" {
		m.related.Add(1)
		if st := m.status.Load(); st != 0 {
			http.Error(w, `{"error": "overloaded"}`, int(st))
			return
		}
		mems := map[string]string{}
		for _, mem := range q.Memory {
			mems[mem.ID] = mem.Text
		}
		content = m.relate(q.NewFact, mems)
	} else {
		var facts []string
		for _, line := range strings.Split(strings.TrimPrefix(user, "Conversation:\n"), "\n") {
			if f, ok := strings.CutPrefix(line, "user: "); ok {
				facts = append(facts, f)
			}
		}
		b, _ := json.Marshal(map[string]any{"facts": facts})
		content = string(b)
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}}})
}

// verdict answers event about the memory whose text contains about, or
// ADD if none does.
func verdict(event, about string) func(string, map[string]string) string {
	return func(_ string, mems map[string]string) string {
		for id, text := range mems {
			if strings.Contains(text, about) {
				return `{"memory": [{"id": "` + id + `", "text": "whatever the model merged", "event": "` + event + `"}]}`
			}
		}
		return `{"memory": [{"id": "new", "event": "ADD"}]}`
	}
}

// newRelateEnv serves the Mem0 handler with the extractor and the update
// step on model, free text matched as the binary does with --extractor-url.
func newRelateEnv(t *testing.T, cls memory.Classifier, model *scriptedModel) *env {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	ex, err := NewChatExtractor(ChatExtractorOptions{URL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := relate.New(relate.Options{URL: srv.URL + "/v1", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(&env{t: t, cls: cls, dir: t.TempDir(), facts: true, relater: rel}, func(o *Options) { o.Extractor = ex })
}

// addInferred adds one user message for alice with infer=true.
func (e *env) addInferred(text string) map[string]any {
	e.t.Helper()
	return e.add(text, "infer", true)
}

// parkOverrides parks every write that would replace an active version
// and applies the rest: an override is policy's to decide.
func parkOverrides(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if in.Current != nil {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride},
			Reasons: []memory.Reason{{Rule: "override", Message: "an override waits for a human"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

// TestModelUpdateIsAnOverride: an add with infer=true whose extracted
// fact the model relates as an UPDATE of a memory goes to that memory's
// slot, where policy judges it as an override: parked against the memory
// when policy parks overrides (though as a memory of its own it would
// apply), superseding it when policy applies it. The model's merged text
// is not used.
func TestModelUpdateIsAnOverride(t *testing.T) {
	// Compare reads the two as possibly one fact (most words in common):
	// the model settles it.
	const old, move = "The weekly report is due on Fridays.", "The weekly report is now due on Mondays."
	t.Run("policy parks it", func(t *testing.T) {
		model := &scriptedModel{relate: verdict("UPDATE", "weekly report")}
		e := newRelateEnv(t, memory.ClassifierFunc(parkOverrides), model)
		first := e.addInferred(old)["results"].([]any)[0].(map[string]any)
		if first["event"] != eventAdd {
			t.Fatalf("the first fact: %v", first)
		}
		ans := e.addInferred(move)
		items := e.pending()
		if len(items) != 1 || model.related.Load() != 1 {
			t.Fatalf("the update is parked: %v, %d pending, %d questions", ans, len(items), model.related.Load())
		}
		it := items[0]
		if it.Current == nil || it.Current.Summary != old || it.Record.SlotID != it.Current.SlotID || it.Record.Summary != move {
			t.Fatalf("the review shows the memory it replaces, in its slot: %+v", it)
		}
		if m := it.Record.FactMatch; m == nil || m.Kind != memory.MatchUpdate || !strings.Contains(m.Reason, "model: UPDATE") {
			t.Errorf("the record says why it is an update: %+v", m)
		}
		if rs := ans["results"].([]any); len(rs) != 1 || rs[0].(map[string]any)["event"] != proxy.EventPendingReview {
			t.Errorf("Mem0 answers PENDING_REVIEW: %v", ans)
		}
		if act := e.active(); len(act) != 1 || act[0].Summary != old {
			t.Errorf("nothing the agent reads changed: %v", act)
		}
	})
	t.Run("policy applies it", func(t *testing.T) {
		model := &scriptedModel{relate: verdict("UPDATE", "weekly report")}
		e := newRelateEnv(t, memory.ClassifierFunc(testPolicy), model)
		id := e.addInferred(old)["results"].([]any)[0].(map[string]any)["id"]
		rs := e.addInferred(move)["results"].([]any)
		if len(rs) != 1 || rs[0].(map[string]any)["id"] != id || rs[0].(map[string]any)["event"] != eventUpdate {
			t.Fatalf("Mem0 answers an UPDATE of the memory %v: %v", id, rs)
		}
		act := e.active()
		if len(act) != 1 || act[0].Summary != move {
			t.Fatalf("one active memory, the new value: %v", act)
		}
		hist, err := e.gov.History(t.Context(), act[0].SlotID)
		if err != nil || len(hist) != 2 || hist[0].Summary != old || hist[0].Status != memory.StatusSuperseded {
			t.Errorf("the old value is history: %v, %v", hist, err)
		}
	})
}

// TestModelNoopAddsNothing: a fact the model relates as NONE of a memory
// (a paraphrase Compare reads as possibly one fact) creates no memory.
func TestModelNoopAddsNothing(t *testing.T) {
	model := &scriptedModel{relate: verdict("NONE", "window seats")}
	e := newRelateEnv(t, memory.ClassifierFunc(testPolicy), model)
	e.addInferred("Alice prefers window seats on flights.")
	ans := e.addInferred("On flights Alice prefers window seats.")
	if rs := ans["results"].([]any); len(rs) != 0 || model.related.Load() != 1 {
		t.Fatalf("a repeat adds nothing: %v (%d questions)", ans, model.related.Load())
	}
	if act := e.active(); len(act) != 1 || act[0].Summary != "Alice prefers window seats on flights." {
		t.Errorf("active memories: %v", act)
	}
}

// TestModelAloneMergesNothing: where Compare reads a memory's words as
// another fact, the model's NONE or UPDATE of it neither drops the write
// nor supersedes the memory. On Badger the matcher's index shows the
// model only the memories Compare relates to the write, so it is not
// even asked; the search path, where it is asked and its word is only
// named, is facts' TestModelVerdicts (budget=-1).
func TestModelAloneMergesNothing(t *testing.T) {
	for _, event := range []string{"NONE", "UPDATE"} {
		t.Run(event, func(t *testing.T) {
			model := &scriptedModel{relate: verdict(event, "staging database")}
			e := newRelateEnv(t, memory.ClassifierFunc(testPolicy), model)
			e.addInferred("The staging database is postgres-stg-2.")
			rs := e.addInferred("Staging now runs on the new cluster, stg-3.")["results"].([]any)
			if len(rs) != 1 || rs[0].(map[string]any)["event"] != eventAdd {
				t.Fatalf("the fact is added: %v", rs)
			}
			if n := model.related.Load(); n != 0 {
				t.Errorf("the model was asked %d times about a write related to no memory", n)
			}
			if act := e.active(); len(act) != 2 {
				t.Fatalf("both facts stay active: %v", act)
			}
		})
	}
}

// TestModelFailureKeepsTheFactApart: with the update step failing, the
// comparison without a model decides: the paraphrase it does not read is
// a memory of its own (a lost fact is worse than a repeat). The messages
// of a verbatim add are never shown to the model.
func TestModelFailureKeepsTheFactApart(t *testing.T) {
	model := &scriptedModel{relate: verdict("NONE", "window seats")}
	model.status.Store(http.StatusInternalServerError)
	e := newRelateEnv(t, memory.ClassifierFunc(testPolicy), model)
	e.addInferred("Alice prefers window seats on flights.")
	if rs := e.addInferred("On flights Alice prefers window seats.")["results"].([]any); len(rs) != 1 ||
		rs[0].(map[string]any)["event"] != eventAdd {
		t.Fatalf("the fact is added: %v", rs)
	}
	if n := model.related.Load(); n != 1 {
		t.Fatalf("%d questions, want 1", n)
	}
	model.status.Store(0)
	e.add("Alice sits by the window whenever she flies.") // infer=false
	if n, act := model.related.Load(), e.active(); n != 1 || len(act) != 3 {
		t.Errorf("a verbatim add: %d questions, %d active memories; want 1 and 3", n, len(act))
	}
}

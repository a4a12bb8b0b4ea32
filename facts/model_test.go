package facts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/relate"
	"github.com/memgate/memgate/search"
)

// question is what relate.Chat asks, as a model reads it.
type question struct {
	Memory []struct {
		ID    string  `json:"id"`
		Text  string  `json:"text"`
		Score float64 `json:"score"`
	} `json:"memory"`
	NewFact string `json:"new_fact"`
}

// scripted is an OpenAI-compatible chat-completions server on loopback
// whose "model" is a Go function of the question: a scripted model, for
// testing the protocol and the rules around it, not any real model's
// judgement.
type scripted struct {
	answer func(q question) string // the content; "" answers status
	status int
	delay  time.Duration
	calls  atomic.Int64
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	var q question
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 ||
		json.Unmarshal([]byte(req.Messages[1].Content), &q) != nil {
		http.Error(w, `{"error": "bad request"}`, http.StatusBadRequest)
		return
	}
	if !testkit.Stall(r, s.delay) {
		return
	}
	if s.status != 0 {
		http.Error(w, `{"error": "overloaded"}`, s.status)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
		"role": "assistant", "content": s.answer(q)}}}})
}

// chat returns a relate.Chat asking s.
func (s *scripted) chat(t testing.TB, timeout time.Duration) *relate.Chat {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := relate.New(relate.Options{URL: srv.URL + "/v1", Model: "scripted", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answers returns an answer of one entry.
func answers(id, event string) string {
	b, _ := json.Marshal(map[string]any{"memory": []any{map[string]string{"id": id, "event": event, "text": "ignored"}}})
	return string(b)
}

// seeded is one user's active memories in a Badger store, and the index
// the matchers search.
type seeded struct {
	budget int64 // the index's (search.Options.Budget): -1 keeps no part
	idx    *search.Index
	ids    map[string]string // text → record id
	subj   string
	scope  memory.Scope
}

// seed writes texts as one user's memories (without a matcher, so each is
// a memory of its own) and indexes them, by meaning too if sem is set
// (sem then gets the records' scan through scan).
func seed(t testing.TB, texts []string, withSem func(scan func(ctx context.Context, fn func(id, text string) bool) error) search.Semantic) *seeded {
	t.Helper()
	return seedWith(t, texts, withSem, 0)
}

// seedWith is seed with the index's budget (-1: it keeps no part, and the
// matcher searches, as on a store without a commit feed).
func seedWith(t testing.TB, texts []string, withSem func(scan func(ctx context.Context, fn func(id, text string) bool) error) search.Semantic, budget int64) *seeded {
	t.Helper()
	st := badgertest.New(t)
	g := memory.NewGovernor(memory.Options{Store: st, Classifier: applyAll})
	s := &seeded{ids: map[string]string{}, scope: memory.Scope{UserID: "u"}, budget: budget}
	for _, text := range texts {
		res, err := g.Submit(context.Background(), memory.Candidate{Summary: text, Scope: s.scope})
		if err != nil || res.Outcome != memory.OutcomeApplied {
			t.Fatalf("seed %q: %v %v", text, res, err)
		}
		s.ids[text], s.subj = res.Record.ID, res.Record.SubjectID
	}
	var sem search.Semantic
	if withSem != nil {
		sem = withSem(func(ctx context.Context, fn func(id, text string) bool) error {
			for text, id := range s.ids {
				if !fn(id, text) {
					break
				}
			}
			return nil
		})
	}
	s.idx = search.New(st, search.Options{Semantic: sem, Budget: s.budget})
	t.Cleanup(func() { s.idx.Close() })
	return s
}

func (s *seeded) match(t testing.TB, m memory.FactMatcher, text string) *memory.FactMatch {
	t.Helper()
	got, err := m.MatchFact(context.Background(), &memory.Record{ID: "write", SubjectID: s.subj, Scope: s.scope,
		Summary: text, Op: memory.OpWrite, Status: memory.StatusPending})
	if err != nil {
		t.Fatalf("match %q: %v", text, err)
	}
	return got
}

func kindOf(m *memory.FactMatch) memory.MatchKind {
	if m == nil {
		return ""
	}
	return m.Kind
}

// TestModelVerdicts: how the model's verdict and Compare's reading
// combine; where Compare found an update or the very text, the model is
// not asked. From the index of the subject's facts the model is shown the
// memories Compare relates to the write, so a write related to none is
// not asked about; from a search (a store without a commit feed) it is
// shown the best ranked, and its word about one Compare reads as another
// fact is only named.
func TestModelVerdicts(t *testing.T) {
	for _, budget := range []int64{0, -1} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) { testModelVerdicts(t, budget) })
	}
}

func testModelVerdicts(t *testing.T, budget int64) {
	window, porto := "Alice prefers window seats on flights.", "Bob lives in Porto."
	s := seedWith(t, []string{window, porto}, nil, budget)
	searched := budget < 0
	// shown is what a case expects where Compare reads another fact: from
	// a search, the model is asked and its word named; from the index,
	// nothing.
	shown := func(of string) (memory.MatchKind, string, bool) {
		if searched {
			return memory.MatchPossible, of, true
		}
		return "", "", false
	}
	type verdictCase struct {
		name, text, answer string
		kind               memory.MatchKind // "": no match
		of                 string           // the memory matched
		asked              bool
	}
	another := func(name, text, answer, of string) verdictCase {
		k, o, a := shown(of)
		return verdictCase{name, text, answer, k, o, a}
	}
	addAlone := verdictCase{"ADD", "Alice has a cat named Tom.", answers("new", "ADD"), "", "", searched}
	for _, tc := range []verdictCase{
		// Where Compare reads another fact, the model's word alone neither
		// drops the write nor supersedes the memory.
		another("NONE where the words state another fact", "Alice always picks a seat by the window when she flies.", answers("0", "NONE"), window),
		another("UPDATE where the words state another fact", "Bob has relocated to Lisbon.", answers("0", "UPDATE"), porto),
		another("DELETE where the words state another fact", "Bob has left Porto for good.", answers("0", "DELETE"), porto),
		addAlone,
		// Where Compare is unsure, the model decides.
		{"UPDATE where Compare reads a possible conflict", "Alice prefers window seats on trains.", answers("0", "UPDATE"), memory.MatchUpdate, window, true},
		{"DELETE is an update, never a deletion", "Alice prefers window seats on trains.", answers("0", "DELETE"), memory.MatchUpdate, window, true},
		{"NONE where Compare reads a possible conflict", "Alice prefers window seats on trains.", answers("0", "NONE"), memory.MatchRepeat, window, true},
		{"ADD where the words repeat: kept apart, named", "Alice likes window seats on flights.", answers("new", "ADD"), memory.MatchPossible, window, true},
		{"UPDATE where the words repeat: an update", "Alice likes window seats on flights.", answers("0", "UPDATE"), memory.MatchUpdate, window, true},
		{"ADD where Compare reads a possible conflict", "Alice prefers window seats on trains.", answers("new", "ADD"), memory.MatchPossible, window, true},
		{"Compare's update stands: not asked", "Alice now prefers aisle seats on flights.", answers("0", "NONE"), memory.MatchUpdate, window, false},
		{"the very text: not asked", "ALICE PREFERS WINDOW SEATS ON FLIGHTS!", answers("new", "ADD"), memory.MatchRepeat, window, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &scripted{answer: func(q question) string {
				// The scripted answer names the memory by its text's id
				// among those shown.
				if tc.of != "" {
					for _, m := range q.Memory {
						if m.Text == tc.of {
							return answers(m.ID, jsonEvent(tc.answer))
						}
					}
				}
				return tc.answer
			}}
			m := &facts.ModelMatcher{Lexical: &facts.Matcher{Index: s.idx}, Model: model.chat(t, time.Second)}
			got := s.match(t, m, tc.text)
			if kindOf(got) != tc.kind || (got != nil && got.RecordID != s.ids[tc.of]) {
				t.Errorf("%q: %+v; want %q of %q", tc.text, got, tc.kind, tc.of)
			}
			if asked := model.calls.Load() > 0; asked != tc.asked {
				t.Errorf("%q: the model asked %v, want %v", tc.text, asked, tc.asked)
			}
		})
	}
}

func jsonEvent(answer string) string {
	var a struct{ Memory []struct{ Event string } }
	json.Unmarshal([]byte(answer), &a)
	return a.Memory[0].Event
}

// TestModelFailuresFallBack: whatever goes wrong with the model (an error
// status, a timeout, an answer that is not the JSON asked for, an id that
// was not shown, an event not in the list), the lexical comparison
// decides, as without a model.
func TestModelFailuresFallBack(t *testing.T) {
	window := "Alice prefers window seats on flights."
	// Searched (no part kept), so that every text is shown to the model.
	s := seedWith(t, []string{window, "Bob lives in Porto."}, nil, -1)
	lexical := &facts.Matcher{Index: s.idx}
	texts := []string{"Alice always picks a seat by the window when she flies.", "Alice likes window seats on flights.",
		"Alice prefers window seats on trains."}
	for _, tc := range []struct {
		name  string
		model *scripted
	}{
		{"error status", &scripted{status: http.StatusInternalServerError}},
		{"timeout", &scripted{delay: 2 * time.Second, answer: func(question) string { return answers("0", "NONE") }}},
		{"bad JSON", &scripted{answer: func(question) string { return `{"memory": [{"id": "0", "event": ` }}},
		{"not a verdict", &scripted{answer: func(question) string { return `The new fact repeats memory 0.` }}},
		{"unknown id", &scripted{answer: func(question) string { return answers("5", "NONE") }}},
		{"a record id", &scripted{answer: func(question) string { return answers(s.ids[window], "UPDATE") }}},
		{"unknown event", &scripted{answer: func(question) string { return answers("0", "MERGE") }}},
		{"no entry", &scripted{answer: func(question) string { return `{"memory": []}` }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &facts.ModelMatcher{Lexical: lexical, Model: tc.model.chat(t, 100*time.Millisecond)}
			for _, text := range texts {
				want, got := s.match(t, lexical, text), s.match(t, m, text)
				if kindOf(got) != kindOf(want) || (got != nil && got.RecordID != want.RecordID) {
					t.Errorf("%q: %+v; want the lexical answer %+v", text, got, want)
				}
			}
			if tc.model.calls.Load() != int64(len(texts)) {
				t.Errorf("the model was asked %d times, want %d", tc.model.calls.Load(), len(texts))
			}
		})
	}
}

// TestModelAsksOnlyWhatItIsMeantTo: Asks selects the writes the model
// sees; the others are matched lexically.
func TestModelAsksOnlyWhatItIsMeantTo(t *testing.T) {
	s := seed(t, []string{"Bob lives in Porto."}, nil)
	model := &scripted{answer: func(question) string { return answers("0", "UPDATE") }}
	m := &facts.ModelMatcher{Lexical: &facts.Matcher{Index: s.idx}, Model: model.chat(t, time.Second),
		Asks: func(r *memory.Record) bool { return r.CandidateSource == memory.SourceInference }}
	if got := s.match(t, m, "Bob has relocated to Lisbon."); got != nil || model.calls.Load() != 0 {
		t.Fatalf("a write Asks leaves out: %+v, %d calls", got, model.calls.Load())
	}
}

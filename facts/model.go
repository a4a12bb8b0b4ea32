package facts

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/memgate/memgate/memory"
)

// Event is a model's answer about a fact and the memories it was shown,
// in the words of Mem0's update step.
type Event string

const (
	EventAdd    Event = "ADD"    // a fact none of the memories states
	EventUpdate Event = "UPDATE" // a new value of the named memory's fact
	EventDelete Event = "DELETE" // contradicts the named memory
	EventNone   Event = "NONE"   // the named memory already states it
)

// Memory is an active memory a Relater is shown, best ranked first.
type Memory struct {
	Text string
	// Score is the memory's search relevance in [0, 1]: BM25, mixed with
	// the similarity of meaning when the index has an embedder.
	Score float64
}

// Verdict is a Relater's answer for one fact.
type Verdict struct {
	Event Event
	// Memory is the index, in the memories shown, of the one the event
	// names; ignored for ADD.
	Memory int
}

// Relater asks a model how a fact relates to active memories: Mem0's
// update step, for one fact. An error (the model down, slow, or answering
// something that is not a verdict about the memories shown) means no
// answer.
type Relater interface {
	Relate(ctx context.Context, fact string, mems []Memory) (Verdict, error)
}

// ModelMatcher is the memory.FactMatcher that also asks a model. It takes
// Lexical's candidates (from the index of the subject's facts, the
// memories Compare relates to the write; from a search, the best ranked,
// by meaning too when the index has an embedder), reads them with Compare
// as Lexical does, and, for the writes Asks selects, shows them to Model. The model's verdict is used
// only where it cannot lower what the write is judged as (DESIGN §1 rules
// 1 and 10):
//
//   - an update Compare found, or a repeat of the very text, stands: the
//     model is not asked (a new value is never dropped, nor moved out of
//     the slot whose policy judges it, on a model's word);
//   - UPDATE, and DELETE, of a memory shown that Compare reads as the
//     same fact at least possibly: the write goes to that memory's slot as
//     an update, which policy judges as an override of it; nothing is
//     deleted;
//   - NONE, of such a memory: a repeat of it (nothing changes), unless
//     Compare read a repeat of another one, which stands;
//   - UPDATE, DELETE or NONE of a memory whose words Compare reads as
//     another fact: the two signals disagree, and a fact dropped or
//     superseded on a model's word alone is the loss the invariant
//     forbids, so the write keeps a memory of its own, named as a
//     possible conflict of that memory (explain shows the model's view);
//   - ADD: a memory of its own; where Compare read a repeat, the two
//     disagree and the write is kept apart as a possible conflict;
//   - no verdict (any error, a memory not shown): Compare's answer.
type ModelMatcher struct {
	Lexical *Matcher
	Model   Relater
	// Asks reports whether the model is asked about a write (nil: every
	// free-text write with candidates).
	Asks   func(*memory.Record) bool
	Logger *slog.Logger // nil: slog.Default()
}

var _ memory.FactMatcher = (*ModelMatcher)(nil)

// MatchFact returns the match for rec Compare and the model agree on, as
// the type's doc says, or nil.
func (m *ModelMatcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	cands, err := m.Lexical.candidates(ctx, rec, m.Lexical.candidateCount())
	if err != nil {
		return nil, err
	}
	lex := lexical(cands)
	if m.Model == nil || len(cands) == 0 || (m.Asks != nil && !m.Asks(rec)) {
		return lex, nil
	}
	if lex != nil && (lex.Kind == memory.MatchUpdate ||
		lex.Kind == memory.MatchRepeat && memory.SameText(rec.Summary, lex.Record.Summary)) {
		return lex, nil
	}
	mems := make([]Memory, len(cands))
	for i, c := range cands {
		mems[i] = Memory{Text: c.rec.Summary, Score: c.score}
	}
	v, err := m.Model.Relate(ctx, rec.Summary, mems)
	if err == nil {
		err = v.check(len(cands))
	}
	if err != nil {
		m.logger().Warn("the model did not relate the write to its memories; the lexical comparison decides",
			"err", err, "record", rec.ID)
		return lex, nil
	}
	return combine(lex, cands, v), nil
}

// check tells a verdict about n memories from one that is not.
func (v Verdict) check(n int) error {
	switch v.Event {
	case EventAdd:
		return nil
	case EventUpdate, EventDelete, EventNone:
		if v.Memory < 0 || v.Memory >= n {
			return fmt.Errorf("facts: the model named memory %d of %d shown", v.Memory, n)
		}
		return nil
	}
	return fmt.Errorf("facts: the model answered the unknown event %.20q", v.Event)
}

// combine reads a model's verdict beside Compare's match lex, which is
// nil, a possible conflict or a repeat of other words.
func combine(lex *memory.FactMatch, cands []candidate, v Verdict) *memory.FactMatch {
	lexRepeat := lex != nil && lex.Kind == memory.MatchRepeat
	switch v.Event {
	case EventUpdate, EventDelete, EventNone:
		if v.Event == EventNone && lexRepeat {
			return lex
		}
		c := cands[v.Memory]
		if c.rel == Distinct {
			return c.match(memory.MatchPossible, fmt.Sprintf("model: %s of this memory, whose words state another fact: kept apart", v.Event))
		}
		if v.Event == EventNone {
			return c.match(memory.MatchRepeat, fmt.Sprintf("model: NONE, this memory states it (compared: %v)", c.rel))
		}
		return c.match(memory.MatchUpdate, fmt.Sprintf("model: %s of this memory (compared: %v)", v.Event, c.rel))
	default: // EventAdd
		if lexRepeat {
			lex.Kind = memory.MatchPossible
			lex.Reason = "model: ADD, a new fact, where the words repeat this memory (" + lex.Reason + ")"
		}
		return lex
	}
}

func (m *ModelMatcher) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

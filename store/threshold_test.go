package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

// largest is a candidate holding every bound of memory.Normalize at its
// limit, in a character c that JSON may escape, so that every copy of it
// the store writes is as large as one can be.
func largest(subject, factType string, layer memory.Layer, tag, c string) memory.Candidate {
	fill := func(n int) string { return tag + strings.Repeat(c, (n-len(tag))/len(c)) }
	esc, _ := json.Marshal(c) // the value as a client may send it: c escaped as JSON must
	value := json.RawMessage(`{"v":"` + tag + strings.Repeat(string(esc[1:len(esc)-1]), (memory.MaxValueBytes-32)/(len(esc)-2)) + `"}`)
	meta := map[string]any{"m": fill(memory.MaxMetadataBytes*len(c)/(len(esc)-2) - 32)}
	return memory.Candidate{Layer: layer, SubjectID: subject, FactType: factType,
		Summary: fill(memory.MaxSummaryBytes), Value: value,
		Evidence: memory.Evidence{Excerpt: fill(memory.MaxEvidenceBytes - 64), SourceRef: "conversation 1"},
		Metadata: meta, Actor: memory.Actor{AgentID: "agent", RunID: "run-big"}}
}

// TestTheLargestWritesFitOneTransaction: with values in Badger's tree
// (valueThreshold), a transaction's values count in full against Badger's
// bound on a transaction. The largest candidates memory admits (and the
// longest notes and reasons), created, overridden, parked and approved,
// rejected, rolled back and quarantined, each commit in one transaction,
// every value stays under the threshold, and nothing reaches the value
// log.
func TestTheLargestWritesFitOneTransaction(t *testing.T) {
	// '<' is six bytes in json.Marshal's JSON, '"' two, U+2028 six for
	// three, and in a value as sent, either '<' or its escape.
	for _, c := range []string{"<", "\"", "\u2028"} {
		t.Run(fmt.Sprintf("%U", []rune(c)[0]), func(t *testing.T) { largestWrites(t, c) })
	}
}

func largestWrites(t *testing.T, c string) {
	dir := t.TempDir()
	st, err := Open(Options{Dir: dir, GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.threshold != valueThreshold {
		t.Fatalf("threshold %d with the default memtables, want %d", st.threshold, valueThreshold)
	}
	ctx := context.Background()
	review := memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
		if in.Candidate.Layer == memory.LayerState {
			return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride},
				Reasons: []memory.Reason{{Rule: "state", Message: "a state change needs a human"}}}, nil
		}
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: review, Outbox: true})
	submit := func(c memory.Candidate, want memory.Outcome) *memory.SubmitResult {
		t.Helper()
		res, err := gov.Submit(ctx, c)
		if err != nil {
			t.Fatalf("submit %s/%s: %v", c.SubjectID, c.FactType, err)
		}
		if res.Outcome != want {
			t.Fatalf("submit %s/%s: %s, want %s", c.SubjectID, c.FactType, res.Outcome, want)
		}
		return res
	}
	// A knowledge fact, overridden three times (each override writes a
	// rollback point holding the version it replaces).
	for i := range 4 {
		submit(largest("alice", "bio", memory.LayerKnowledge, fmt.Sprint("v", i), c), map[bool]memory.Outcome{true: memory.OutcomeApplied, false: memory.OutcomeApplied}[i == 0])
	}
	// A state, then overrides that park; one approved, one rejected.
	submit(largest("alice", "status", memory.LayerState, "s0", c), memory.OutcomeParked)
	approved := submit(largest("alice", "status", memory.LayerState, "s1", c), memory.OutcomeParked)
	rejected := submit(largest("alice", "status", memory.LayerState, "s2", c), memory.OutcomeParked)
	note := strings.Repeat(c, memory.MaxNoteBytes/len(c)) // the most an operator may write
	if _, err := gov.Approve(ctx, approved.Record.ID, memory.Review{By: "bob", Note: note + "xx"}); memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("approve with a note over the bound: %v, want %s", err, memory.EINVALID)
	}
	if _, err := gov.Approve(ctx, approved.Record.ID, memory.Review{By: "bob", Note: note}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if _, err := gov.Reject(ctx, rejected.Record.ID, memory.Review{By: "bob", Note: note}); err != nil {
		t.Fatalf("reject: %v", err)
	}
	last := submit(largest("alice", "bio", memory.LayerKnowledge, "v4", c), memory.OutcomeApplied)
	if _, err := gov.Rollback(ctx, last.Record.ID, false, note, "ops"); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if _, err := gov.Quarantine(ctx, "run", "run-big", note, "ops"); err != nil {
		t.Fatalf("quarantine: %v", err)
	}

	var largestValue int64
	var where string
	err = st.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.AllVersions = true
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if n := it.Item().ValueSize(); n > largestValue {
				largestValue, where = n, string(it.Item().Key())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest value: %d bytes (%s)", largestValue, where)
	if largestValue >= st.threshold {
		t.Errorf("a value of %d bytes (%s) went to the value log", largestValue, where)
	}
	if err := st.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := st.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	if u.ValueLog > 64<<10 {
		t.Errorf("the value log holds %d bytes: values reached it", u.ValueLog)
	}
}

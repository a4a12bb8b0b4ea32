package embed_test

import (
	"testing"
	"time"

	"github.com/memgate/memgate/embed/embedtest"
)

// On a store without a commit feed nobody calls Changed: the periodic
// reconcile alone embeds the records written and drops the vectors of the
// records gone, in memory and in the Store.
func TestReconcilesPeriodicallyWithoutAFeed(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{reconcile: 5 * time.Millisecond})
	f.recs.set("r1", "I prefer dark mode in every editor")
	f.recs.set("r2", "the build runs on Fridays")
	eventually(t, "both records embedded", func() bool { return x.Len() == 2 })
	eventually(t, "both vectors stored", func() bool { return len(f.store.Keys("v/")) == 2 })
	if got := hasScore(t, x, "what editor theme does alice like?", "r1", "r2"); got["r1"] <= got["r2"] {
		t.Errorf("scores %v: the preference should rank first", got)
	}
	f.recs.remove("r1")
	eventually(t, "the removed record's vector dropped", func() bool { return x.Len() == 1 })
	eventually(t, "and deleted from the store", func() bool { return len(f.store.Keys("v/")) == 1 })
	if f.srv.Embedded("I prefer dark mode in every editor") != 1 || f.srv.Embedded("the build runs on Fridays") != 1 {
		t.Error("a record was embedded more than once")
	}
}

// Two instances share one Store (as on PostgreSQL). Instance B's view of
// the records lags A's, so A embeds first; when B reconciles it takes the
// stored vector instead of asking the endpoint again, unless the vector
// was made from another text or by another model.
func TestInstancesSharingAStoreEmbedEachTextOnce(t *testing.T) {
	const text = "I prefer dark mode in every editor"
	for _, tc := range []struct {
		name           string
		textA, textB   string // the record's text as each instance's scan reads it
		modelA, modelB string
		bEmbeds        bool
	}{
		{"same text and model: adopted", text, text, "m", "m", false},
		{"stored vector of another text: embedded", "the build runs on Fridays", text, "m", "m", true},
		{"stored vector of another model: embedded", text, text, "model-a", "model-b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, embedtest.Options{})
			seenByA, seenByB := newRecords(), newRecords()
			// B opens first, on an empty store: the meta it needs appears later.
			b := f.open(t, indexOpts{model: tc.modelB, reconcile: 5 * time.Millisecond, scan: seenByB.scan})
			eventually(t, "B's first reconcile", func() bool { return reconciles(t, f) >= 1 })
			a := f.open(t, indexOpts{model: tc.modelA, reconcile: 5 * time.Millisecond, scan: seenByA.scan})
			seenByA.set("r1", tc.textA)
			eventually(t, "A's vector", func() bool { return a.Len() == 1 })
			eventually(t, "A's vector stored", func() bool { return len(f.store.Keys("v/")) == 1 })
			before := f.srv.Embedded(tc.textB)

			seenByB.set("r1", tc.textB)
			eventually(t, "B's vector", func() bool { return b.Len() == 1 })
			if embedded := f.srv.Embedded(tc.textB) - before; embedded != map[bool]int{false: 0, true: 1}[tc.bEmbeds] {
				t.Errorf("B embedded the text %d times, want embeds=%v", embedded, tc.bEmbeds)
			}
			// B's vector is the text's, whoever made it: B ranks r1 as the
			// endpoint's cosine says.
			got := hasScore(t, b, "what editor theme does alice like?", "r1")["r1"]
			if want := embedtest.Cosine("what editor theme does alice like?", tc.textB, embedtest.DefaultDim); got < want-1e-6 || got > want+1e-6 {
				t.Errorf("B scores r1 %v, want the cosine of its text %v", got, want)
			}
		})
	}
}

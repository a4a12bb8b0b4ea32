package facts

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// The tests here hold the index of a subject's facts (index.go), and the
// Matcher over it, to comparing a write with every active memory of its
// subject and scope: the same relation, and the same memory.

// textPool returns texts a subject's memories are made of: the labelled
// set (both columns), normalised variants of some, facts written to one
// pattern with a few keys and values (so that repeats, updates and near
// misses abound), and sentences of a small vocabulary (so that many share
// most of their words).
func textPool(t *testing.T) []string {
	var out []string
	for i, g := range readGroups(t) {
		out = append(out, g.memory, g.text)
		if i%4 == 0 {
			out = append(out, variants(g.text)[i%8])
		}
	}
	names := []string{"Alice", "Bob", "the user", "my manager", "项目 Atlas"}
	attrs := []string{"'s manager", "'s city", "'s editor", " seat", "的状态"}
	values := []string{"Tom", "Porto", "vim", "window seats", "aisle seats", "开发中", "测试中", "Postgres 15", "Postgres 16"}
	verbs := []string{"is", "prefers", "lives in", "moved to", "uses", "switched to", "no longer uses", "works at", "是", "喜欢"}
	contexts := []string{"", " on flights", " on trains", " when travelling", " at work"}
	r := rand.New(rand.NewPCG(7, 7))
	for range 300 {
		n, a := names[r.IntN(len(names))], ""
		if r.IntN(2) == 0 {
			a = attrs[r.IntN(len(attrs))]
		}
		out = append(out, n+a+" "+verbs[r.IntN(len(verbs))]+" "+values[r.IntN(len(values))]+contexts[r.IntN(len(contexts))])
	}
	// Short texts whose words differ only in a number (numberChanged),
	// most sharing too few words for the overlap test.
	nums := []string{"5", "8", "7:30", "85k", "1.22", "六", "七", "2 3"}
	for range 120 {
		subj := []string{"bob jogs", "the user wakes up at", "每天早上 点起床", "tom salary", "go version"}[r.IntN(5)]
		tail := []string{"", " km", " am", " a week", " 点"}[r.IntN(5)]
		now := []string{"", "now ", "现在"}[r.IntN(3)] // the writer says it changed
		out = append(out, now+subj+" "+nums[r.IntN(len(nums))]+tail)
	}
	small := strings.Fields("alice bob coffee tea morning evening deploy friday window seat flight train is in on the not 3 12")
	for range 300 {
		ws := make([]string, 1+r.IntN(9))
		for i := range ws {
			ws[i] = small[r.IntN(len(small))]
		}
		out = append(out, strings.Join(ws, " "))
	}
	return append(out, "", "!!!", "the", "not", "...", strings.Repeat("coffee and tea ", 40))
}

// mutate returns s changed a little, the way a new write differs from a
// memory: a word dropped, added, replaced, swapped or negated, or the case
// or punctuation changed.
func mutate(r *rand.Rand, pool []string, s string) string {
	ws := strings.Fields(s)
	other := strings.Fields(pool[r.IntN(len(pool))])
	if len(ws) == 0 || len(other) == 0 {
		return pool[r.IntN(len(pool))]
	}
	i := r.IntN(len(ws))
	switch r.IntN(7) {
	case 0:
		ws = slices.Delete(ws, i, i+1)
	case 1:
		ws = slices.Insert(ws, i, other[r.IntN(len(other))])
	case 2:
		ws[i] = other[r.IntN(len(other))]
	case 3:
		j := r.IntN(len(ws))
		ws[i], ws[j] = ws[j], ws[i]
	case 4:
		ws = slices.Insert(ws, i, "not")
	case 5:
		return strings.ToUpper(s) + "."
	case 6:
		ws = slices.Insert(ws, i, "now")
	}
	return strings.Join(ws, " ")
}

// related is the brute force: how a relates to each of mems, those it is
// not Distinct from, by id.
func bruteRelated(a *clause, mems map[string]*clause) map[string]Relation {
	out := map[string]Relation{}
	for id, b := range mems {
		if rel, _ := compare(a, b); rel != Distinct {
			out[id] = rel
		}
	}
	return out
}

// TestIndexFindsEveryRelatedMemory holds the index, as memories come, are
// replaced and leave in two scopes of a subject, to compare: for each
// write, the memories of its scope it relates to, and how, are those
// comparing it with every memory of the scope finds.
func TestIndexFindsEveryRelatedMemory(t *testing.T) {
	pool := textPool(t)
	scopes := []memory.Scope{{UserID: "u1"}, {UserID: "u2", AgentID: "a"}}
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := newSubjectFacts().(*subjectFacts)
		mems := map[memory.Scope]map[string]*clause{scopes[0]: {}, scopes[1]: {}}
		ids := []string{}
		text := func() string {
			if r.IntN(3) == 0 {
				return mutate(r, pool, pool[r.IntN(len(pool))])
			}
			return pool[r.IntN(len(pool))]
		}
		checked, found := 0, 0
		for step := range 1500 {
			switch op := r.IntN(10); {
			case op < 6 || len(ids) == 0: // a new memory
				id := fmt.Sprintf("m%05d", step)
				sc := scopes[r.IntN(len(scopes))]
				e := storeapi.ActiveEntry{ID: id, SubjectID: "s", Scope: sc, Summary: text()}
				s.Set(e)
				mems[sc][id] = parse(e.Summary)
				ids = append(ids, id)
			case op < 8: // one leaves
				i := r.IntN(len(ids))
				s.Remove(ids[i])
				for _, m := range mems {
					delete(m, ids[i])
				}
				ids = slices.Delete(ids, i, i+1)
			default: // one changes in place (an entry set again)
				id := ids[r.IntN(len(ids))]
				sc := scopes[r.IntN(len(scopes))]
				for _, m := range mems {
					delete(m, id)
				}
				e := storeapi.ActiveEntry{ID: id, SubjectID: "s", Scope: sc, Summary: text()}
				s.Set(e)
				mems[sc][id] = parse(e.Summary)
			}
			for range 3 {
				w := text()
				if r.IntN(2) == 0 && len(ids) > 0 { // most writes are near a memory
					id := ids[r.IntN(len(ids))]
					for _, m := range mems {
						if c, ok := m[id]; ok {
							w = mutate(r, pool, strings.Join(c.words, " "))
						}
					}
				}
				sc := scopes[r.IntN(len(scopes))]
				a := parse(w)
				got := map[string]Relation{}
				for _, d := range s.related(w, a, sc) {
					got[d.id] = d.rel
				}
				want := bruteRelated(a, mems[sc])
				if !maps2Equal(got, want) {
					t.Fatalf("seed %d step %d: %q in %v relates to %v, comparing every memory to %v", seed, step, w, sc, got, want)
				}
				checked++
				if len(want) > 0 {
					found++
				}
			}
		}
		if found < checked/10 {
			t.Fatalf("seed %d: only %d of %d writes relate to a memory: the test tests little", seed, found, checked)
		}
	}
}

func maps2Equal(a, b map[string]Relation) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// governors is a Badger store on disk with an index, a governor that
// writes free text without a matcher (every write a memory of its own,
// repeats and updates included), and the Matcher under test.
type governors struct {
	st     *store.Store
	idx    *search.Index
	gov    *memory.Governor
	m      *Matcher
	parsed sync.Map // text → *clause, for wantMatch
}

func openGovernors(t *testing.T, dir string) *governors {
	t.Helper()
	st := badgertest.Open(t, store.Options{Dir: dir, NoSync: true})
	idx := search.New(st, search.Options{})
	apply := memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	return &governors{st: st, idx: idx, m: &Matcher{Index: idx}, gov: memory.NewGovernor(memory.Options{Store: st, Classifier: apply})}
}

func (g *governors) close() { g.idx.Close(); g.st.Close() }

// wantMatch compares rec with every active memory of its subject (read
// from the store, not the index) and returns the relation of the
// strongest match and the memory the Matcher must name: among equals,
// the one with most words in common, then the newest.
func (g *governors) wantMatch(t *testing.T, rec *memory.Record) (Relation, string, int) {
	t.Helper()
	recs, err := g.gov.List(context.Background(), memory.ListFilter{SubjectID: rec.SubjectID})
	if err != nil {
		t.Fatal(err)
	}
	a := parse(rec.Summary)
	best, bestID, ties := Distinct, "", 0
	var bestOverlap float64
	for _, r := range recs {
		if r.Scope != rec.Scope {
			continue
		}
		b, ok := g.parsed.Load(r.Summary)
		if !ok {
			b, _ = g.parsed.LoadOrStore(r.Summary, parse(r.Summary))
		}
		rel, _ := compare(a, b.(*clause))
		if rel == Distinct {
			continue
		}
		o := overlap(a.words, b.(*clause).words)
		switch c := cmp.Or(cmp.Compare(rel, best), cmp.Compare(o, bestOverlap), cmp.Compare(r.ID, bestID)); {
		case rel > best:
			best, bestID, bestOverlap, ties = rel, r.ID, o, 1
		case rel == best && c > 0:
			best, bestID, bestOverlap = rel, r.ID, o
			ties++
		case rel == best:
			ties++
		}
	}
	return best, bestID, ties
}

// checkMatch holds the Matcher's answer for a write of text to wantMatch.
func (g *governors) checkMatch(t *testing.T, subject string, scope memory.Scope, text string) (Relation, int) {
	t.Helper()
	rec := &memory.Record{ID: "write", Op: memory.OpWrite, SubjectID: subject, Scope: scope, Summary: text}
	if f, err := g.idx.Follow(context.Background(), subject, followerKey{}, newSubjectFacts); f == nil || err != nil {
		t.Fatalf("the index keeps no facts of %s (%v): the matcher would search instead", subject, err)
	}
	got, err := g.m.MatchFact(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	rel, id, ties := g.wantMatch(t, rec)
	switch {
	case rel == Distinct && got != nil:
		t.Fatalf("%q in %v: the matcher found %s %s (%s), comparing every memory finds none", text, scope, got.Kind, got.RecordID, got.Reason)
	case rel != Distinct && (got == nil || got.Kind != kinds[rel] || got.RecordID != id):
		t.Fatalf("%q in %v: the matcher found %+v, comparing every memory finds %s %s (of %d)", text, scope, got, rel, id, ties)
	}
	return rel, ties
}

// TestMatcherEqualsComparingEveryMemory writes random memories of two
// subjects (one of them in two scopes) through a governor without a
// matcher, edits and deletes some, and holds the Matcher, for writes
// near them and far, to comparing the write with every active memory of
// its subject and scope: the same relation and the same memory. Then
// again after a restart, the index of facts made anew from the store.
func TestMatcherEqualsComparingEveryMemory(t *testing.T) {
	pool := textPool(t)
	dir := t.TempDir()
	g := openGovernors(t, dir)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	type mem struct {
		slot, text string
		c          memory.Candidate
	}
	var mems []mem
	cands := []memory.Candidate{{Scope: memory.Scope{UserID: "alice"}}, {SubjectID: "team", Scope: memory.Scope{UserID: "alice"}},
		{SubjectID: "team", Scope: memory.Scope{UserID: "bob"}}}
	subjects := map[int]string{}
	probe := func(near bool) (Relation, int) {
		i := r.IntN(len(cands))
		text := pool[r.IntN(len(pool))]
		if near && len(mems) > 0 {
			m := mems[r.IntN(len(mems))]
			i, text = slices.IndexFunc(cands, func(c memory.Candidate) bool { return c.SubjectID == m.c.SubjectID && c.Scope == m.c.Scope }), m.text
			if r.IntN(4) > 0 {
				text = mutate(r, pool, text)
			}
		}
		subject, ok := subjects[i]
		if !ok {
			return Distinct, 0
		}
		return g.checkMatch(t, subject, cands[i].Scope, text)
	}
	counts := map[Relation]int{}
	tied := 0
	for step := range 400 {
		switch op := r.IntN(10); {
		case op < 7 || len(mems) == 0:
			i := r.IntN(len(cands))
			c := cands[i]
			c.Summary = pool[r.IntN(len(pool))]
			if r.IntN(3) == 0 && len(mems) > 0 {
				c.Summary = mutate(r, pool, mems[r.IntN(len(mems))].text)
			}
			if c.Summary == "" {
				continue
			}
			res, err := g.gov.Submit(ctx, c)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			subjects[i] = res.Record.SubjectID
			mems = append(mems, mem{res.Record.SlotID, c.Summary, c})
		case op < 9: // an edit by id: a new version replaces the memory
			j := r.IntN(len(mems))
			m := &mems[j]
			text := mutate(r, pool, m.text)
			if text == "" {
				continue
			}
			res, err := g.gov.Submit(ctx, memory.Candidate{SlotID: m.slot, Summary: text, Scope: m.c.Scope})
			if err != nil {
				t.Fatalf("step %d: edit %s: %v", step, m.slot, err)
			}
			if res.Outcome == memory.OutcomeApplied {
				m.text = text
			}
		default:
			j := r.IntN(len(mems))
			if _, err := g.gov.Submit(ctx, memory.Candidate{Op: memory.OpDelete, SlotID: mems[j].slot, Scope: mems[j].c.Scope}); err != nil {
				t.Fatalf("step %d: delete %s: %v", step, mems[j].slot, err)
			}
			mems = slices.Delete(mems, j, j+1)
		}
		for _, near := range []bool{true, false} {
			rel, ties := probe(near)
			counts[rel]++
			if ties > 1 {
				tied++
			}
		}
	}
	for _, rel := range []Relation{Distinct, Possible, Update, Repeat} {
		if counts[rel] < 20 {
			t.Fatalf("only %d writes found %s: %v; the test tests little", counts[rel], rel, counts)
		}
	}
	if tied < 10 {
		t.Fatalf("only %d writes had equals to choose from", tied)
	}
	t.Logf("relations found: %v; %d writes chose among equals", counts, tied)

	// A restart: the index of facts is made again from the store.
	g.close()
	g = openGovernors(t, dir)
	defer g.close()
	for range 150 {
		probe(true)
		probe(false)
	}
}

// TestMatcherUnderConcurrentWrites runs matchers beside writers, editors
// and deleters of one subject (go test -race looks for races in the index
// of facts), then holds the Matcher to comparing every memory once they
// stop.
func TestMatcherUnderConcurrentWrites(t *testing.T) {
	pool := textPool(t)
	g := openGovernors(t, t.TempDir())
	defer g.close()
	ctx := context.Background()
	scope := memory.Scope{UserID: "carol"}
	first, err := g.gov.Submit(ctx, memory.Candidate{Summary: "Carol prefers tea in the morning", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	subject := first.Record.SubjectID
	stop := make(chan struct{})
	var readers, writers sync.WaitGroup
	for i := range 2 {
		readers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				rec := &memory.Record{ID: "write", SubjectID: subject, Scope: scope, Summary: pool[r.IntN(len(pool))]}
				if _, err := g.m.MatchFact(ctx, rec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 3 {
		writers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 10))
			var slots []string
			for range 60 {
				c := memory.Candidate{Summary: pool[r.IntN(len(pool))], Scope: scope}
				switch {
				case len(slots) > 0 && r.IntN(4) == 0:
					c.SlotID = slots[r.IntN(len(slots))]
					c.Summary = mutate(r, pool, c.Summary)
				case len(slots) > 0 && r.IntN(6) == 0:
					c.Op, c.SlotID, c.Summary = memory.OpDelete, slots[0], ""
					slots = slots[1:]
				}
				if c.Op != memory.OpDelete && c.Summary == "" {
					continue
				}
				res, err := g.gov.Submit(ctx, c)
				if err != nil {
					t.Error(err)
					return
				}
				if c.SlotID == "" {
					slots = append(slots, res.Record.SlotID)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	r := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		g.checkMatch(t, subject, scope, pool[r.IntN(len(pool))])
	}
}

package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/store"
)

// checkIndex compares every part the index holds with a fresh scan of the
// store's index in an aligned snapshot: a commit path that forgets to hand
// a change of the index to the feed shows here.
func checkIndex(x *Index) error {
	if err := checkCacheBytes(x); err != nil {
		return err
	}
	parts := map[string][]*entry{}
	told := map[string][]*entry{} // what each part's recorder was told
	ctx := context.Background()
	return x.feed.ViewAligned(ctx, func() {
		x.mu.RLock()
		defer x.mu.RUnlock()
		for k, p := range x.parts {
			if !p.loading {
				parts[k] = p.view().entries()
			}
			for _, f := range p.followers {
				if r, ok := f.f.(*recorder); ok {
					told[k] = r.entries()
				}
			}
		}
	}, func(sn storeapi.Snapshot) error {
		for pk, got := range parts {
			var want []*entry
			subject, scope := partSelection(pk)
			err := sn.ScanActiveIndex(ctx, subject, scope, func(e storeapi.ActiveEntry, _ uint64) bool {
				want = append(want, newEntry(e, true))
				return true
			})
			if err != nil {
				return err
			}
			if err := sameEntries(pk, got, want); err != nil {
				return err
			}
			if r, ok := told[pk]; ok {
				if err := sameEntries(pk+" (its follower)", r, want); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func sameEntries(pk string, got, want []*entry) error {
	{
		if len(got) != len(want) {
			return fmt.Errorf("part %q: %d entries cached, %d in Badger\ncached %v\nBadger %v", pk, len(got), len(want), ids(got), ids(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.SubjectID != w.SubjectID || g.Layer != w.Layer || g.Scope != w.Scope ||
				g.Summary != w.Summary || g.lower != w.lower || !g.CreatedAt.Equal(w.CreatedAt) || !g.ActivatedAt.Equal(w.ActivatedAt) {
				return fmt.Errorf("part %q, entry %d: cached %+v, Badger %+v", pk, i, g.ActiveEntry, w.ActiveEntry)
			}
		}
	}
	return nil
}

// checkCacheBytes holds the sizes the cache counts to its entries'.
func checkCacheBytes(c *Index) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var total int64
	for k, p := range c.parts {
		if p.loading {
			continue
		}
		size := partOverhead(k)
		for _, e := range p.all() {
			size += entrySize(e)
		}
		if size != p.bytes {
			return fmt.Errorf("part %q counts %d bytes, its entries and overhead %d", k, p.bytes, size)
		}
		total += size
	}
	if total != c.bytes {
		return fmt.Errorf("the cache counts %d bytes, its parts %d", c.bytes, total)
	}
	return nil
}

// TestIndexLoadReplaysWhatCameMeanwhile registers a part as loading,
// has a commit return meanwhile (one newer than the load's snapshot, made
// up), and finds it in the part once loaded, sizes counted once.
func TestIndexLoadReplaysWhatCameMeanwhile(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{InMemory: true}, Options{})
	ctx := context.Background()
	for i := range 3 {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", Summary: fmt.Sprint("stored ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c := x
	p := &part{key: partKey("s", memory.Scope{}), loading: true, done: make(chan struct{})}
	c.mu.Lock()
	c.parts[p.key] = p
	c.mu.Unlock()
	later := uint64(1 << 40) // read after anything the load's snapshot holds
	c.Begin(later)
	c.End(later, []storeapi.ActiveChange{{ActiveEntry: storeapi.ActiveEntry{SubjectID: "s", ID: "zz-later", Layer: memory.LayerKnowledge,
		Summary: "came meanwhile"}, Active: true}}, storeapi.Committed)
	ok, err := c.fill(ctx, p)
	if err != nil || !ok {
		t.Fatalf("load: %v, %v", ok, err)
	}
	pv, _ := c.ready(p.key)
	es := pv.entries()
	if len(es) != 4 || es[3].ID != "zz-later" {
		t.Fatalf("loaded %v, want the 3 stored and the one that came meanwhile", ids(es))
	}
	if err := checkCacheBytes(c); err != nil {
		t.Fatal(err)
	}
}

func ids(es []*entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestIndexFollowsEveryCommitPath runs random sequences of every
// governor operation that changes the active layer (submit applying,
// parking or rejecting, delete, approve in both modes, reject, rollback
// with and without cascade, quarantine of a run, restore of a subject)
// and, after each, holds every cached part to Badger and List to what
// History says is active. Parts are loaded before the sequence and in its
// middle; a small budget makes them come and go.
func TestIndexFollowsEveryCommitPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		seed   uint64
	}{
		{"default budget", 0, 1},
		{"default budget, another sequence", 0, 2},
		{"budget for a few parts", 48 << 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := badgertest.NewWith(t, store.Options{NoSync: true})
			x := New(st, Options{Budget: tc.budget})
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.ByFirstWord), Outbox: true, BatchSlots: 3})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			subjects := []string{"s0", "s1", "s2"}
			users := []string{"u0", "u1"}
			var records, parked, applied []string
			var times []time.Time
			var log []string
			done := map[string]int{}
			query := func() {
				for _, s := range subjects {
					if _, err := list(ctx, x, memory.ListFilter{SubjectID: s}); err != nil {
						t.Fatal(err)
					}
					if _, err := x.Follow(ctx, s, recorderKey{}, newRecorder); err != nil {
						t.Fatal(err)
					}
				}
				for _, u := range users {
					if _, err := list(ctx, x, memory.ListFilter{Scope: memory.Scope{UserID: u}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			query()
			for step := range 300 {
				subject := subjects[rng.IntN(len(subjects))]
				fact := fmt.Sprintf("f%d", rng.IntN(3))
				run := fmt.Sprintf("run%d", rng.IntN(3))
				pick := func() string {
					if len(records) == 0 {
						return ""
					}
					return records[rng.IntN(len(records))]
				}
				note := func(r *memory.Record) {
					if r != nil && !slices.Contains(records, r.ID) {
						records = append(records, r.ID)
						times = append(times, r.CreatedAt)
					}
					if r != nil && r.Status == memory.StatusPending {
						parked = append(parked, r.ID)
					}
					if r != nil && r.Status == memory.StatusActive {
						applied = append(applied, r.ID)
					}
				}
				// Most approvals, rejections and rollbacks pick what they
				// can decide or roll back.
				pickFrom := func(list *[]string) string {
					if len(*list) == 0 || rng.IntN(5) == 0 {
						return pick()
					}
					i := rng.IntN(len(*list))
					id := (*list)[i]
					*list = slices.Delete(*list, i, i+1)
					return id
				}
				var what string
				var err error
				switch op := rng.IntN(10); op {
				case 0, 1, 2, 3:
					word := []string{"apply", "apply", "park", "reject"}[op]
					if rng.IntN(4) == 0 {
						fact = "" // a slot of its own
					}
					summary := fmt.Sprintf("%s %d Word%d", word, step, rng.IntN(5))
					what = fmt.Sprintf("submit %s/%s %q", subject, fact, summary)
					var res *memory.SubmitResult
					res, err = gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: subject, FactType: fact,
						Summary: summary, Scope: memory.Scope{UserID: users[rng.IntN(len(users))]}, Actor: memory.Actor{AgentID: "a", RunID: run}})
					if err == nil {
						note(res.Record)
					}
				case 4:
					what = fmt.Sprintf("delete %s/%s", subject, fact)
					var res *memory.SubmitResult
					res, err = gov.Submit(ctx, memory.Candidate{Op: memory.OpDelete, SlotID: memory.KeyedSlotID(subject, fact),
						Actor: memory.Actor{RunID: run}})
					if err == nil {
						note(res.Record)
					}
				case 5:
					id := pickFrom(&parked)
					mode := []memory.ReviewMode{memory.ModeOverride, memory.ModeAppend}[rng.IntN(2)]
					what = fmt.Sprintf("approve %s %s", id, mode)
					var r *memory.Record
					if r, err = gov.Approve(ctx, id, memory.Review{By: "t", Mode: mode}); err == nil {
						note(r)
					}
				case 6:
					id := pickFrom(&parked)
					what = "reject " + id
					_, err = gov.Reject(ctx, id, memory.Review{By: "t"})
				case 7:
					id := pickFrom(&applied)
					cascade := rng.IntN(2) == 0
					what = fmt.Sprintf("rollback %s cascade=%v", id, cascade)
					_, err = gov.Rollback(ctx, id, cascade, "t", "t")
				case 8:
					what = "quarantine " + run
					_, err = gov.Quarantine(ctx, "run", run, "t", "t")
				case 9:
					if len(times) == 0 {
						continue
					}
					at := times[rng.IntN(len(times))]
					what = fmt.Sprintf("restore %s to %s", subject, at.Format(time.StampMicro))
					_, err = gov.Restore(ctx, subject, at, "t", "t")
				}
				log = append(log, what)
				switch memory.ErrorCode(err) {
				case "", memory.EINVALID, memory.ENOTFOUND, memory.EDECIDED, memory.ECONFLICT, memory.ESTALE:
				default:
					t.Fatalf("%s: %v", what, err)
				}
				if step == 150 {
					query() // parts evicted meanwhile load again
				}
				if err := checkIndex(x); err != nil {
					t.Fatalf("after %s: %v\nsteps:\n%s", what, err, strings.Join(log, "\n"))
				}
				if step%10 == 0 {
					checkListsActive(t, gov, x, records, subjects, users)
				}
				if err == nil {
					done[strings.Fields(what)[0]]++
				}
			}
			for _, op := range []string{"submit", "delete", "approve", "reject", "rollback", "quarantine", "restore"} {
				if done[op] == 0 {
					t.Errorf("no %s succeeded: %v", op, done)
				}
			}
		})
	}
}

// checkListsActive holds List of each subject and user to the records
// whose own status is active.
func checkListsActive(t *testing.T, gov *memory.Governor, x *Index, records, subjects, users []string) {
	t.Helper()
	ctx := context.Background()
	var active []*memory.Record
	for _, id := range records {
		r, err := gov.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == memory.StatusActive {
			active = append(active, r)
		}
	}
	var filters []memory.ListFilter
	for _, s := range subjects {
		filters = append(filters, memory.ListFilter{SubjectID: s}, memory.ListFilter{SubjectID: s, Query: "word1"})
	}
	for _, u := range users {
		filters = append(filters, memory.ListFilter{Scope: memory.Scope{UserID: u}}, memory.ListFilter{Scope: memory.Scope{UserID: u}, Query: "apply"})
	}
	for _, f := range filters {
		got, err := list(ctx, x, f)
		if err != nil {
			t.Fatal(err)
		}
		want, gotIDs := matchingIDs(active, f), sortedIDs(got)
		if !slices.Equal(gotIDs, want) {
			t.Fatalf("List %+v = %v, want %v", f, gotIDs, want)
		}
	}
}

// TestCheckIndexSeesABypass makes sure the check above would catch
// a commit path that changes the index without telling the cache.
func TestCheckIndexSeesABypass(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{InMemory: true}, Options{})
	ctx := context.Background()
	res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", Summary: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := list(ctx, x, memory.ListFilter{SubjectID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := checkIndex(x); err != nil {
		t.Fatal(err)
	}
	err = x.feed.(*store.Store).DB().Update(func(txn *badger.Txn) error { return txn.Delete([]byte("a/s\x00" + res.Record.ID)) })
	if err != nil {
		t.Fatal(err)
	}
	if checkIndex(x) == nil {
		t.Fatal("a change of the index behind the cache's back went unseen")
	}
}

// TestIndexOrdersChanges feeds the cache commits returning in an
// order other than their commit order, and parts loading meanwhile: what
// a later commit set or removed stays, whatever arrives after it.
func TestIndexOrdersChanges(t *testing.T) {
	set := func(id, summary string) storeapi.ActiveChange {
		return storeapi.ActiveChange{ActiveEntry: storeapi.ActiveEntry{SubjectID: "s", ID: id, Layer: memory.LayerKnowledge, Summary: summary,
			Scope: memory.Scope{UserID: "u"}}, Active: true}
	}
	del := func(id string) storeapi.ActiveChange {
		return storeapi.ActiveChange{ActiveEntry: storeapi.ActiveEntry{SubjectID: "s", ID: id, Scope: memory.Scope{UserID: "u"}}}
	}
	type event struct {
		begin   bool // else end (committed)
		version uint64
		ch      []storeapi.ActiveChange
	}
	b := func(v uint64) event { return event{begin: true, version: v} }
	e := func(v uint64, ch ...storeapi.ActiveChange) event { return event{version: v, ch: ch} }
	for _, tc := range []struct {
		name   string
		events []event
		want   []string // id=summary of the part, in key order
	}{
		{"in order", []event{b(1), e(1, set("a", "one")), b(3), e(3, del("a"), set("b", "two"))}, []string{"b=two"}},
		{"a removal arriving before the set it follows",
			// t1 (version 1) set a; t2 (version 5: it read after t1 committed) removed it; t2 returns first.
			[]event{b(1), b(5), e(5, del("a")), e(1, set("a", "one"))}, nil},
		{"an older set arriving after a newer one",
			[]event{b(1), b(5), e(5, set("a", "new")), e(1, set("a", "old"))}, []string{"a=new"}},
		{"a removal remembered while an older commit is in flight",
			[]event{b(1), b(5), b(7), e(5, del("a")), e(7, set("c", "x")), e(1, set("a", "one"))}, []string{"c=x"}},
		{"a set and a removal in one commit", []event{b(2), e(2, set("a", "one"), del("a"), set("a", "two"))}, []string{"a=two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newBareIndex(1 << 20)
			p := &part{key: "s\x00s", memo: new(memo)}
			c.parts[p.key] = p
			for _, ev := range tc.events {
				if ev.begin {
					c.Begin(ev.version)
				} else {
					c.End(ev.version, ev.ch, storeapi.Committed)
				}
			}
			var got []string
			for _, e := range p.all() {
				got = append(got, e.ID+"="+e.Summary)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("part holds %v, want %v", got, tc.want)
			}
			if len(c.inflight) != 0 || len(c.recent) != 0 {
				t.Fatalf("%d commits in flight, %d versions kept after all returned", len(c.inflight), len(c.recent))
			}
		})
	}
}

// TestIndexConcurrentWriters has writers on one subject and one
// user, each reading its own writes through List right after they return
// (read-your-writes through the cache), while readers list and parts load,
// then holds the cache to Badger.
func TestIndexConcurrentWriters(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{Dir: t.TempDir(), GroupCommit: true}, Options{})
	ctx := context.Background()
	stop := make(chan struct{})
	scope := memory.Scope{UserID: "u"}
	count := func(f memory.ListFilter) int {
		recs, err := list(ctx, x, f)
		if err != nil {
			t.Error(err)
		}
		for _, r := range recs {
			if r.Status != memory.StatusActive {
				t.Errorf("List returned %s, %s", r.ID, r.Status)
			}
		}
		return len(recs)
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				count(memory.ListFilter{SubjectID: "hot", Query: "v1"})
				count(memory.ListFilter{Scope: scope, Query: "v2"})
				if _, err := x.Follow(ctx, "hot", recorderKey{}, newRecorder); err != nil {
					t.Error(err)
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			for i := range 15 {
				for k, f := range []memory.ListFilter{{SubjectID: "hot"}, {Scope: scope}} {
					fact := fmt.Sprintf("w%d.f%d.%d", w, i, k)
					mark := fmt.Sprintf("mark%dx%dx%dx", w, i, k) // no mark holds another
					f.Query = mark
					res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "hot", FactType: fact,
						Summary: mark + " v1", Scope: scope})
					if err != nil {
						t.Error(err)
						return
					}
					if n := count(f); n != 1 {
						t.Errorf("after applying %s: List %+v found %d", res.Record.ID, f, n)
					}
					over, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "hot", FactType: fact,
						Summary: mark + " v2", Scope: scope})
					if err != nil {
						t.Error(err)
						return
					}
					f.Query = mark + " v2"
					if n := count(f); n != 1 {
						t.Errorf("after the override %s: List %+v found %d", over.Record.ID, f, n)
					}
					if _, err := gov.Rollback(ctx, over.Record.ID, false, "t", "t"); err != nil {
						t.Error(err)
						return
					}
					if n := count(f); n != 0 {
						t.Errorf("after rolling back %s: List %+v found %d", over.Record.ID, f, n)
					}
					f.Query = mark + " v1"
					if n := count(f); n != 1 {
						t.Errorf("after rolling back %s: List %+v found %d of what it restored", over.Record.ID, f, n)
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if err := checkIndex(x); err != nil {
		t.Fatal(err)
	}
	if got := count(memory.ListFilter{SubjectID: "hot", Query: "v1"}); got != 4*15*2 {
		t.Fatalf("%d active records, want %d", got, 4*15*2)
	}
}

// TestIndexAcrossRestart lists through the cache, reopens the store
// on disk and finds the same, then changes to the reopened store showing.
func TestIndexAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var x *Index
	open := func() (*store.Store, *memory.Governor) {
		st := badgertest.Open(t, store.Options{Dir: dir})
		x = New(st, Options{})
		return st, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	}
	listed := func(_ *memory.Governor, f memory.ListFilter) []string {
		recs, err := list(ctx, x, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.ID+" "+r.Summary)
		}
		return out
	}
	filters := []memory.ListFilter{{SubjectID: "s"}, {Scope: memory.Scope{UserID: "u"}}, {SubjectID: "s", Query: "tea"}}
	st, gov := open()
	var first []string
	for i := range 30 {
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: fmt.Sprintf("f%d", i%10),
			Summary: fmt.Sprintf("likes tea %d", i), Scope: memory.Scope{UserID: "u"}})
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, res.Record.ID)
		if i == 5 {
			listed(gov, filters[0]) // parts loaded early, kept up to date after
			listed(gov, filters[1])
		}
	}
	if _, err := gov.Rollback(ctx, first[25], false, "t", "t"); err != nil {
		t.Fatal(err)
	}
	before := map[int][]string{}
	for i, f := range filters {
		before[i] = listed(gov, f)
	}
	if err := checkIndex(x); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, gov = open()
	defer st.Close()
	for i, f := range filters {
		if got := listed(gov, f); !slices.Equal(got, before[i]) {
			t.Fatalf("after restart List %+v = %v\nbefore %v", f, got, before[i])
		}
	}
	if _, err := gov.Rollback(ctx, first[29], false, "t", "t"); err != nil {
		t.Fatal(err)
	}
	if err := checkIndex(x); err != nil {
		t.Fatal(err)
	}
	if got := listed(gov, filters[0]); slices.Equal(got, before[0]) {
		t.Fatal("a rollback after the restart does not show")
	}
}

// TestIndexBudget keeps parts within the budget: the least recently
// used goes first, and a part larger than the whole budget is not kept,
// its readers scanning Badger instead.
func TestIndexBudget(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{InMemory: true}, Options{Budget: 100 << 10}) // two parts of 40 entries, not one of 400
	ctx := context.Background()
	for subject, n := range map[string]int{"small-a": 40, "small-b": 40, "big": 400} {
		for i := range n {
			_, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: subject, Summary: fmt.Sprintf("%s note %d", subject, i)})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	cached := func() []string {
		x.mu.RLock()
		defer x.mu.RUnlock()
		var out []string
		for k := range x.parts {
			out = append(out, strings.TrimPrefix(k, "s\x00"))
		}
		slices.Sort(out)
		return out
	}
	for _, step := range []struct {
		subject string
		want    int
		cached  []string
	}{
		{"small-a", 40, []string{"small-a"}},
		{"small-b", 40, []string{"small-a", "small-b"}},
		{"big", 400, []string{"small-a", "small-b"}}, // over budget: scanned, not kept
		{"small-a", 40, []string{"small-a", "small-b"}},
	} {
		recs, err := list(ctx, x, memory.ListFilter{SubjectID: step.subject})
		if err != nil || len(recs) != step.want {
			t.Fatalf("List %s: %d records, %v; want %d", step.subject, len(recs), err, step.want)
		}
		if got := cached(); !slices.Equal(got, step.cached) {
			t.Fatalf("after listing %s the cache holds %v, want %v", step.subject, got, step.cached)
		}
	}
	if x.bytes > x.budget {
		t.Fatalf("%d bytes cached over a budget of %d", x.bytes, x.budget)
	}
	// Shrink the budget below both parts: the least recently used goes.
	x.mu.Lock()
	x.budget = x.bytes - 1
	x.evict(nil)
	x.mu.Unlock()
	if got := cached(); !slices.Equal(got, []string{"small-a"}) {
		t.Fatalf("after eviction the cache holds %v, want the part listed last", got)
	}
}

// BenchmarkIndexCommit is what a commit that supersedes one active
// record (one entry removed, one set) adds to the write path: with no part
// of it cached, and with its subject and its user cached at 10,000
// entries each, read between writes (each change then copies the parts'
// slices first).
func BenchmarkIndexCommit(b *testing.B) {
	scope := memory.Scope{UserID: "u"}
	for _, tc := range []struct {
		name   string
		cached bool
	}{{"nothing cached", false}, {"subject and user of 10,000 cached, read between", true}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newBareIndex(1 << 30)
			if tc.cached {
				for _, pk := range partKeys("s", scope) {
					p := &part{key: pk}
					var es []*entry
					var vers []uint64
					for i := range 10_000 {
						id := fmt.Sprintf("r%06d", i)
						es = append(es, newEntry(storeapi.ActiveEntry{ID: id, SubjectID: "s", Layer: memory.LayerKnowledge, Scope: scope,
							Summary: "a summary of some length " + id}, true))
						vers = append(vers, 1)
					}
					p.set(es, vers)
					c.parts[pk] = p
				}
			}
			ts := uint64(10)
			for i := 0; b.Loop(); i++ {
				old, cur := fmt.Sprintf("r%06d", i%10_000), fmt.Sprintf("r%06d", (i+1)%10_000)
				changes := []storeapi.ActiveChange{
					{ActiveEntry: storeapi.ActiveEntry{SubjectID: "s", ID: old, Scope: scope}},
					{ActiveEntry: storeapi.ActiveEntry{SubjectID: "s", ID: cur, Layer: memory.LayerKnowledge, Scope: scope, Summary: "a new summary"}, Active: true},
				}
				c.Begin(ts)
				c.End(ts, changes, storeapi.Committed)
				ts += 2
				for _, p := range c.parts {
					p.view() // a reader between writes
				}
			}
		})
	}
}

// TestPartChunks changes a part at random, far past the size of a
// chunk, holds it to a plain map after each change, and checks that what
// readers took earlier stays as they took it.
func TestPartChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := &part{key: "s\x00s"}
	p.set(nil, nil)
	want := map[string]string{}
	type held struct {
		part partView
		ids  []string
	}
	var snaps []held
	ver := uint64(1)
	for step := range 20_000 {
		id := fmt.Sprintf("r%05d", rng.IntN(3000))
		subject := []string{"a", "b"}[rng.IntN(2)]
		ch := storeapi.ActiveChange{ActiveEntry: storeapi.ActiveEntry{SubjectID: subject, ID: id, Summary: fmt.Sprint(step)}, Active: rng.IntN(3) > 0}
		if step > 15_000 {
			ch.Active = rng.IntN(4) == 0 // mostly removals: chunks empty out
		}
		ver++
		p.apply(ver, &ch)
		if ch.Active {
			want[subject+"\x00"+id] = ch.Summary
		} else {
			delete(want, subject+"\x00"+id)
		}
		if rng.IntN(50) == 0 {
			s := p.view()
			snaps = append(snaps, held{s, ids(s.entries())})
		}
		if step%500 != 0 {
			continue
		}
		got := p.all()
		if len(got) != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, len(got), len(want))
		}
		for i, e := range got {
			if want[e.SubjectID+"\x00"+e.ID] != e.Summary {
				t.Fatalf("step %d: entry %s/%s holds %q, want %q", step, e.SubjectID, e.ID, e.Summary, want[e.SubjectID+"\x00"+e.ID])
			}
			if i > 0 && compareKey(got[i-1], e.SubjectID, e.ID) >= 0 {
				t.Fatalf("step %d: entries out of order at %d", step, i)
			}
		}
		for ci, c := range p.chunks {
			if len(c) == 0 || len(c) > 2*chunkSize || len(c) != len(p.vers[ci]) {
				t.Fatalf("step %d: chunk %d holds %d entries, %d versions", step, ci, len(c), len(p.vers[ci]))
			}
		}
		for _, h := range snaps {
			if !slices.Equal(ids(h.part.entries()), h.ids) {
				t.Fatalf("step %d: a reader's entries changed under it", step)
			}
		}
	}
	if len(p.chunks) < 2 && len(want) > 2*chunkSize {
		t.Fatalf("%d entries in %d chunks", len(want), len(p.chunks))
	}
}

// TestListUnderConcurrentSupersedes keeps superseding one slot while
// readers List its subject: every List must show exactly one version.
func TestListUnderConcurrentSupersedes(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{Dir: t.TempDir(), GroupCommit: true}, Options{})
	ctx := context.Background()
	for i := range 300 { // other records of the subject, so a List takes a while
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s",
			FactType: fmt.Sprintf("filler.%d", i), Summary: "filler"}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(i int) error {
		_, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: "s",
			FactType: "phase", Summary: fmt.Sprintf("phase %d", i)})
		return err
	}
	if err := phase(0); err != nil { // the slot has a version before anyone reads
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := phase(i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	bad := 0
	for range 1500 {
		got, err := list(ctx, x, memory.ListFilter{SubjectID: "s", Layer: memory.LayerState})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			bad++
			if bad <= 3 {
				for _, r := range got {
					t.Logf("List %d: %s %s %s", len(got), r.ID, r.Status, r.Summary)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	if bad > 0 {
		t.Fatalf("%d of 1500 Lists did not see exactly one version of the slot", bad)
	}
}

// TestEmptyPartsStayWithinBounds queries many entity ids with no records:
// each leaves an empty part, and they must not grow the cache past its
// bounds (the ids come from clients).
func TestEmptyPartsStayWithinBounds(t *testing.T) {
	x, _ := applyingGovernor(t, store.Options{Dir: t.TempDir()}, Options{Budget: 64 << 10})
	ctx := context.Background()
	for i := range 2 * maxParts {
		if _, err := list(ctx, x, memory.ListFilter{Scope: memory.Scope{UserID: fmt.Sprintf("nobody-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c := x
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.parts) > maxParts || c.bytes > c.budget {
		t.Fatalf("%d parts kept, counted as %d bytes (budget %d, at most %d parts)", len(c.parts), c.bytes, c.budget, maxParts)
	}
	if len(c.parts) == 0 {
		t.Fatal("no part kept at all: the test no longer exercises the cache")
	}
}

// applyingGovernor opens a store with so, an index over it with o, and a
// governor over it that applies every write (groupPolicy); the store
// closes when the test ends.
func applyingGovernor(tb testing.TB, so store.Options, o Options) (*Index, *memory.Governor) {
	tb.Helper()
	st, err := store.Open(so)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	// A decision later than the policy timeout parks the write; on a
	// loaded runner under -race even this instant policy can be, and a
	// parked write is not what these tests are about.
	return New(st, o), memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy),
		PolicyTimeout: time.Minute})
}

func groupPolicy(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

// list is the native list route's read: List of the query compiled.
func list(ctx context.Context, x *Index, f memory.ListFilter) ([]*memory.Record, error) {
	sf, err := FromList(f)
	if err != nil {
		return nil, err
	}
	return x.List(ctx, sf, f.Limit)
}

// newBareIndex is an index over no store, fed by hand.
func newBareIndex(budget int64) *Index {
	return &Index{budget: budget, parts: map[string]*part{}, inflight: map[uint64]int{}, recent: map[string]uint64{},
		tooBig: map[string]time.Time{}}
}

// matchingIDs is the sorted ids of the records f matches, by testing each.
func matchingIDs(records []*memory.Record, f memory.ListFilter) []string {
	words := strings.Fields(strings.ToLower(f.Query))
	var out []string
	for _, r := range records {
		if f.Match(r, words) {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	return out
}

// sortedIDs is the records' ids, sorted.
func sortedIDs(records []*memory.Record) []string {
	var out []string
	for _, r := range records {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

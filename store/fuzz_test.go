package store_test

// FuzzGovernorSequence runs random sequences of governor operations on a
// real Badger store (in memory, shared by the inputs of one fuzz process,
// each input on subjects of its own) and checks DESIGN §1's invariants
// after every operation through the governor's read API.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

var fuzzEnv struct {
	once sync.Once
	gov  *memory.Governor
	err  error
	n    atomic.Int64
}

func fuzzGovernor(t *testing.T) *memory.Governor {
	fuzzEnv.once.Do(func() {
		st, err := store.Open(store.Options{InMemory: true})
		if err != nil {
			fuzzEnv.err = err
			return
		}
		c := testkit.NewTicking(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), time.Millisecond)
		fuzzEnv.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.ByFirstWord),
			Now: c.Now, Outbox: true, BatchSlots: 3})
	})
	if fuzzEnv.err != nil {
		t.Fatal(fuzzEnv.err)
	}
	return fuzzEnv.gov
}

// govSequence is one input's run: what it wrote, to pick operations from
// and to check.
type govSequence struct {
	t        *testing.T
	gov      *memory.Governor
	ns       string
	subjects []string
	records  []string
	slots    map[string]string // slot id → subject
	times    []time.Time
	log      []string
}

func (s *govSequence) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf(format+"\nafter:\n%s", append(args, strings.Join(s.log, "\n"))...)
}

func (s *govSequence) pick(arg byte) string {
	if len(s.records) == 0 {
		return ""
	}
	return s.records[int(arg)%len(s.records)]
}

func (s *govSequence) step(kind, arg byte) {
	ctx := context.Background()
	subject := s.subjects[int(arg)%len(s.subjects)]
	fact := fmt.Sprintf("f%d", int(arg>>1)%2)
	layer := []memory.Layer{memory.LayerState, memory.LayerKnowledge, memory.LayerCheckpoint}[int(arg>>2)%3]
	run := fmt.Sprintf("%s-run%d", s.ns, int(arg>>3)%2)
	var what string
	var err error
	note := func(r *memory.Record) {
		if r == nil {
			return
		}
		if !slices.Contains(s.records, r.ID) {
			s.records = append(s.records, r.ID)
		}
		s.slots[r.SlotID] = r.SubjectID
		s.times = append(s.times, r.CreatedAt)
	}
	switch kind % 9 {
	case 0, 1, 2:
		word := []string{"apply", "park", "reject"}[kind%9]
		summary := fmt.Sprintf("%s %d", word, len(s.log))
		if arg&0x40 != 0 {
			summary = word + " again" // repeats can be unchanged
		}
		what = fmt.Sprintf("submit %s/%s %s %q by %s", subject, fact, layer, summary, run)
		var res *memory.SubmitResult
		res, err = s.gov.Submit(ctx, memory.Candidate{Layer: layer, SubjectID: subject, FactType: fact, Summary: summary,
			Actor: memory.Actor{AgentID: s.ns, RunID: run}})
		if err == nil {
			note(res.Record)
		}
	case 3:
		what = fmt.Sprintf("delete %s/%s", subject, fact)
		var res *memory.SubmitResult
		res, err = s.gov.Submit(ctx, memory.Candidate{Op: memory.OpDelete, SlotID: memory.KeyedSlotID(subject, fact),
			Actor: memory.Actor{RunID: run}})
		if err == nil {
			note(res.Record)
		}
	case 4, 5:
		id := s.pick(arg)
		if id == "" {
			return
		}
		var rec *memory.Record
		if kind%9 == 4 {
			mode := []memory.ReviewMode{memory.ModeOverride, memory.ModeAppend}[arg>>7]
			what = fmt.Sprintf("approve %s %s", id, mode)
			rec, err = s.gov.Approve(ctx, id, memory.Review{By: "fuzz", Mode: mode})
		} else {
			what = "reject " + id
			rec, err = s.gov.Reject(ctx, id, memory.Review{By: "fuzz"})
		}
		if err == nil {
			note(rec)
		}
	case 6:
		id := s.pick(arg)
		if id == "" {
			return
		}
		cascade := arg&0x80 != 0
		what = fmt.Sprintf("rollback %s cascade=%v", id, cascade)
		_, err = s.gov.Rollback(ctx, id, cascade, "fuzz", "fuzz")
	case 7:
		what = "quarantine " + run
		_, err = s.gov.Quarantine(ctx, "run", run, "fuzz", "fuzz")
	case 8:
		if len(s.times) == 0 {
			return
		}
		at := s.times[int(arg)%len(s.times)]
		what = fmt.Sprintf("restore %s to %s", subject, at.Format(time.StampMilli))
		_, err = s.gov.Restore(ctx, subject, at, "fuzz", "fuzz")
	}
	s.log = append(s.log, what)
	if err != nil {
		switch memory.ErrorCode(err) {
		case memory.EINVALID, memory.ENOTFOUND, memory.EDECIDED, memory.ECONFLICT, memory.ESTALE:
		default:
			s.fail("%s: %v", what, err)
		}
	}
	s.check(ctx)
}

// check reads every slot the input wrote to and holds it to DESIGN §1:
// at most one active version, which is what a read of the slot returns;
// reads of a subject list exactly its slots' active versions; applied
// versions have their rollback point; parked ones are in the review queue.
func (s *govSequence) check(ctx context.Context) {
	activeBySubject := map[string][]string{}
	for slot, subject := range s.slots {
		hist, err := s.gov.History(ctx, slot)
		if err != nil {
			s.fail("history of %s: %v", slot, err)
		}
		var active []string
		for _, r := range hist {
			if r.SlotID != slot {
				s.fail("history of %s lists %s of slot %s", slot, r.ID, r.SlotID)
			}
			switch r.Status {
			case memory.StatusActive:
				active = append(active, r.ID)
				fallthrough
			case memory.StatusSuperseded, memory.StatusDeleted:
				if r.RollbackPoint == "" {
					s.fail("applied %s has no rollback point", r.ID)
				}
			case memory.StatusPending:
				if _, err := s.gov.Review(ctx, r.ID); err != nil {
					s.fail("parked %s is not reviewable: %v", r.ID, err)
				}
			}
		}
		if len(active) > 1 {
			s.fail("slot %s has %d active versions: %v", slot, len(active), active)
		}
		got, err := s.gov.Get(ctx, slot)
		// A slot of its own (approved as append) has its record's id, and
		// Get by a record id returns that record whatever its status.
		ownSlot := len(hist) == 1 && hist[0].ID == slot
		switch {
		case len(active) == 1 && (err != nil || got.ID != active[0]):
			s.fail("reading slot %s gives %v, %v; its active version is %s", slot, got, err, active[0])
		case len(active) == 0 && !ownSlot && memory.ErrorCode(err) != memory.ENOTFOUND:
			s.fail("reading slot %s without an active version gives %v, %v", slot, got, err)
		}
		activeBySubject[subject] = append(activeBySubject[subject], active...)
	}
	for _, subject := range s.subjects {
		list, err := s.gov.List(ctx, memory.ListFilter{SubjectID: subject})
		if err != nil {
			s.fail("list %s: %v", subject, err)
		}
		var ids []string
		for _, r := range list {
			if r.Status != memory.StatusActive {
				s.fail("list %s shows %s, which is %s", subject, r.ID, r.Status)
			}
			ids = append(ids, r.ID)
		}
		want := activeBySubject[subject]
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			s.fail("list %s = %v, want the active versions %v", subject, ids, want)
		}
	}
}

func FuzzGovernorSequence(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 6, 1, 6, 0})                           // two versions, roll back both
	f.Add([]byte{0, 0, 1, 0, 1, 0, 4, 1, 4, 2, 4, 1})               // two parked; approving one makes the other stale
	f.Add([]byte{1, 4, 4, 129, 5, 0, 0, 4})                         // knowledge parked, approved as append
	f.Add([]byte{0, 0, 3, 0, 6, 1, 2, 0, 6, 128})                   // delete, rollback, rejected write, cascade
	f.Add([]byte{0, 8, 0, 9, 1, 8, 0, 0, 7, 8, 7, 0})               // two runs, quarantine both
	f.Add([]byte{0, 0, 0, 2, 0, 0, 8, 1, 0, 2, 8, 0, 6, 128, 6, 3}) // restore to a point in time
	f.Add([]byte{0, 64, 0, 64, 1, 64, 4, 2, 6, 1, 7, 0, 8, 2})      // repeats, unchanged writes
	f.Add([]byte{1, 4, 4, 129, 'X', '0', '0', '0'})                 // approved as append, then quarantined
	f.Fuzz(func(t *testing.T, ops []byte) {
		n := fuzzEnv.n.Add(1)
		ns := fmt.Sprintf("fz%d", n)
		s := &govSequence{t: t, gov: fuzzGovernor(t), ns: ns, subjects: []string{ns + "-a", ns + "-b"}, slots: map[string]string{}}
		for i := 0; i+1 < len(ops) && i < 80; i += 2 {
			s.step(ops[i], ops[i+1])
		}
	})
}

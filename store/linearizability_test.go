package store_test

// Linearizability of slot histories: concurrent writers, reviewers and
// rollbacks drive the real Governor on a durable Badger store, every call
// is logged with its invocation and response times, and porcupine checks
// that the history is explained by some sequential order of the calls on
// a simple model of one slot.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// Operations on one slot, as the model knows them.
const (
	linWrite    = "write"    // a candidate policy applies
	linPark     = "park"     // a candidate policy sends to review
	linApprove  = "approve"  // approve a parked write (override)
	linReject   = "reject"   // reject a parked write
	linRollback = "rollback" // roll back one record (no cascade)
	linRead     = "read"     // the slot's active record
)

// Results of a call.
const (
	resOK       = "ok"
	resStale    = "stale"
	resDecided  = "already_decided"
	resConflict = "conflict"
)

type linInput struct {
	slot int
	op   string
	id   string // the record approved, rejected or rolled back
}

type linOutput struct {
	result string
	id     string // write, park: the new record
	// ref is what the call saw of the slot's head: what a write or an
	// approval replaced, the head a parked write expects, the head a
	// rollback restored, the head a read found ("" for none).
	ref string
}

// slotState is the model of one slot: the line of applied versions still
// in force (oldest first; the last is the head) and the parked writes with
// the head each expects. Strings keep it comparable with ==.
type slotState struct {
	chain   string // ids joined by ","
	pending string // "id=expected" pairs joined by ";", sorted
}

func (s slotState) head() string {
	if s.chain == "" {
		return ""
	}
	return s.chain[strings.LastIndexByte(s.chain, ',')+1:]
}

func (s slotState) push(id string) slotState {
	if s.chain == "" {
		s.chain = id
	} else {
		s.chain += "," + id
	}
	return s
}

func (s slotState) pop() slotState {
	if i := strings.LastIndexByte(s.chain, ','); i >= 0 {
		s.chain = s.chain[:i]
	} else {
		s.chain = ""
	}
	return s
}

func (s slotState) parked() map[string]string {
	m := map[string]string{}
	if s.pending == "" {
		return m
	}
	for _, kv := range strings.Split(s.pending, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func (s slotState) withParked(m map[string]string) slotState {
	pairs := make([]string, 0, len(m))
	for k, v := range m {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	s.pending = strings.Join(pairs, ";")
	return s
}

// step is the sequential specification of one slot (DESIGN §1 rules 1, 3,
// 4 and 5): a write replaces the head; a parked write remembers it; an
// approval is a compare-and-swap against it that, when stale, re-parks the
// write against the current head; a decision is taken once; a rollback of
// the head restores what it replaced; anything else is refused.
func step(state, input, output any) (bool, any) {
	s, in, out := state.(slotState), input.(linInput), output.(linOutput)
	head := s.head()
	switch in.op {
	case linWrite:
		return out.result == resOK && out.ref == head, s.push(out.id)
	case linPark:
		p := s.parked()
		p[out.id] = head
		return out.result == resOK && out.ref == head, s.withParked(p)
	case linApprove:
		p := s.parked()
		expected, ok := p[in.id]
		switch {
		case !ok:
			return out.result == resDecided, s
		case expected == head:
			delete(p, in.id)
			return out.result == resOK && out.ref == head, s.withParked(p).push(in.id)
		default:
			p[in.id] = head
			return out.result == resStale, s.withParked(p)
		}
	case linReject:
		p := s.parked()
		if _, ok := p[in.id]; !ok {
			return out.result == resDecided, s
		}
		delete(p, in.id)
		return out.result == resOK, s.withParked(p)
	case linRollback:
		if head == "" || head != in.id {
			return out.result == resConflict, s
		}
		next := s.pop()
		return out.result == resOK && out.ref == next.head(), next
	case linRead:
		return out.result == resOK && out.ref == head, s
	}
	return false, s
}

var slotModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		bySlot := map[int][]porcupine.Operation{}
		for _, op := range history {
			s := op.Input.(linInput).slot
			bySlot[s] = append(bySlot[s], op)
		}
		out := make([][]porcupine.Operation, 0, len(bySlot))
		for _, ops := range bySlot {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return slotState{} },
	Step: step,
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		return fmt.Sprintf("slot %d %s(%s) -> %s %s ref=%s", in.slot, in.op, in.id, out.result, out.id, out.ref)
	},
	DescribeState: func(state any) string {
		s := state.(slotState)
		return fmt.Sprintf("chain [%s] pending [%s]", s.chain, s.pending)
	},
}

// linPolicy applies or parks by the summary's first word.
func linPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if strings.HasPrefix(in.Candidate.Summary, "park") {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride},
			Reasons: []memory.Reason{{Rule: "lin_park", Message: "parked by the test"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
		Reasons: []memory.Reason{{Rule: "lin_apply", Message: "applied by the test"}}}, nil
}

// linClient runs calls on one slot and logs each with its times.
type linClient struct {
	gov   *memory.Governor
	slot  int
	base  time.Time
	mu    *sync.Mutex
	ops   *[]porcupine.Operation
	known *linKnown
}

// linKnown are the record ids clients have seen, to pick calls from.
type linKnown struct {
	mu      sync.Mutex
	parked  []string
	applied []string
}

func (k *linKnown) pick(rng *rand.Rand, parked bool) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	list := k.applied
	if parked {
		list = k.parked
	}
	if len(list) == 0 {
		return ""
	}
	// Mostly recent ids: old ones are long decided or superseded.
	if rng.IntN(4) > 0 {
		list = list[max(0, len(list)-3):]
	}
	return list[rng.IntN(len(list))]
}

func (k *linKnown) add(id string, parked bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if parked {
		k.parked = append(k.parked, id)
	} else {
		k.applied = append(k.applied, id)
	}
}

// call runs one call, logs it and returns its output.
func (c *linClient) call(t *testing.T, client int, in linInput) linOutput {
	t.Helper()
	ctx := context.Background()
	subject := fmt.Sprintf("lin-%d", c.slot)
	call := time.Since(c.base).Nanoseconds()
	var out linOutput
	var err error
	switch in.op {
	case linWrite, linPark:
		var res *memory.SubmitResult
		res, err = c.gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: "fact",
			Summary: fmt.Sprintf("%s by client %d at %d", in.op, client, call)})
		if err == nil {
			want := map[string]memory.Outcome{linWrite: memory.OutcomeApplied, linPark: memory.OutcomeParked}[in.op]
			if res.Outcome != want {
				t.Errorf("%s: outcome %s, want %s", in.op, res.Outcome, want)
				return out
			}
			out = linOutput{result: resOK, id: res.Record.ID, ref: res.Record.Supersedes}
			if in.op == linPark {
				out.ref = res.Record.ExpectedHead
			}
			c.known.add(res.Record.ID, in.op == linPark)
		}
	case linApprove:
		var rec *memory.Record
		rec, err = c.gov.Approve(ctx, in.id, memory.Review{By: "lin", Mode: memory.ModeOverride})
		if err == nil {
			out = linOutput{result: resOK, ref: rec.Supersedes}
			c.known.add(in.id, false)
		}
	case linReject:
		_, err = c.gov.Reject(ctx, in.id, memory.Review{By: "lin"})
		if err == nil {
			out = linOutput{result: resOK}
		}
	case linRollback:
		var res *memory.RollbackResult
		res, err = c.gov.Rollback(ctx, in.id, false, "lin", "lin")
		if err == nil {
			out = linOutput{result: resOK}
			if res.Restored != nil {
				out.ref = res.Restored.ID
			}
		}
	case linRead:
		var rec *memory.Record
		rec, err = c.gov.Get(ctx, memory.KeyedSlotID(subject, "fact"))
		switch {
		case err == nil:
			out = linOutput{result: resOK, ref: rec.ID}
		case memory.ErrorCode(err) == memory.ENOTFOUND:
			out, err = linOutput{result: resOK}, nil
		}
	}
	if err != nil {
		switch code := memory.ErrorCode(err); code {
		case memory.ESTALE, memory.EDECIDED, memory.ECONFLICT:
			out = linOutput{result: code}
		default:
			t.Errorf("%s(%s): %v", in.op, in.id, err)
			return out
		}
	}
	ret := time.Since(c.base).Nanoseconds()
	c.mu.Lock()
	*c.ops = append(*c.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	c.mu.Unlock()
	return out
}

func TestSlotHistoriesAreLinearizable(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(linPolicy)})

	const slots, clientsPerSlot, callsPerClient = 2, 5, 30
	var mu sync.Mutex
	var ops []porcupine.Operation
	base := time.Now()
	var wg sync.WaitGroup
	for s := range slots {
		lc := &linClient{gov: gov, slot: s, base: base, mu: &mu, ops: &ops, known: &linKnown{}}
		for c := range clientsPerSlot {
			client := s*clientsPerSlot + c
			rng := rand.New(rand.NewPCG(uint64(client), 8))
			wg.Go(func() {
				for range callsPerClient {
					in := linInput{slot: s}
					switch x := rng.IntN(100); {
					case x < 25:
						in.op = linWrite
					case x < 45:
						in.op = linPark
					case x < 65:
						in.op, in.id = linApprove, lc.known.pick(rng, true)
					case x < 72:
						in.op, in.id = linReject, lc.known.pick(rng, true)
					case x < 80:
						// Roll back the head a read just saw (others may
						// have moved it since: then it conflicts).
						in.op, in.id = linRollback, lc.call(t, client, linInput{slot: s, op: linRead}).ref
					case x < 85:
						in.op, in.id = linRollback, lc.known.pick(rng, false)
					default:
						in.op = linRead
					}
					if in.op != linWrite && in.op != linPark && in.op != linRead && in.id == "" {
						in.op = linRead // nothing to decide or roll back yet
					}
					lc.call(t, client, in)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	count := map[string]int{}
	for _, op := range ops {
		count[op.Input.(linInput).op+"/"+op.Output.(linOutput).result]++
	}
	t.Logf("%d calls: %v", len(ops), count)
	for _, must := range []string{"write/ok", "park/ok", "approve/ok", "rollback/ok", "read/ok"} {
		if count[must] == 0 {
			t.Errorf("no %s call in the history: it proves less than it should", must)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(slotModel, ops, 30*time.Second)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("memgate-linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(slotModel, info, path); err != nil {
			t.Logf("visualization: %v", err)
		}
		t.Fatalf("slot histories are %s; visualization in %s", res, path)
	}
}

// TestSlotModelRejectsLostUpdates proves the model catches what it must: a
// history where two applied writes both replaced the same head (a lost
// update), or an approval succeeded against a changed slot, is illegal.
func TestSlotModelRejectsLostUpdates(t *testing.T) {
	op := func(call, ret int64, in linInput, out linOutput) porcupine.Operation {
		return porcupine.Operation{Input: in, Call: call, Output: out, Return: ret}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    porcupine.CheckResult
	}{
		{"sequential writes chain", []porcupine.Operation{
			op(0, 1, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(2, 3, linInput{op: linWrite}, linOutput{result: resOK, id: "b", ref: "a"}),
			op(4, 5, linInput{op: linRollback, id: "b"}, linOutput{result: resOK, ref: "a"}),
			op(6, 7, linInput{op: linRead}, linOutput{result: resOK, ref: "a"}),
		}, porcupine.Ok},
		{"lost update", []porcupine.Operation{
			op(0, 1, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(2, 3, linInput{op: linWrite}, linOutput{result: resOK, id: "b", ref: "a"}),
			op(4, 5, linInput{op: linWrite}, linOutput{result: resOK, id: "c", ref: "a"}),
		}, porcupine.Illegal},
		{"concurrent writes may order either way", []porcupine.Operation{
			op(0, 1, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(2, 6, linInput{op: linWrite}, linOutput{result: resOK, id: "b", ref: "c"}),
			op(3, 5, linInput{op: linWrite}, linOutput{result: resOK, id: "c", ref: "a"}),
		}, porcupine.Ok},
		{"approval over a changed slot", []porcupine.Operation{
			op(0, 1, linInput{op: linPark}, linOutput{result: resOK, id: "p"}),
			op(2, 3, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(4, 5, linInput{op: linApprove, id: "p"}, linOutput{result: resOK, ref: "a"}),
		}, porcupine.Illegal},
		{"stale approval re-parks against the new head", []porcupine.Operation{
			op(0, 1, linInput{op: linPark}, linOutput{result: resOK, id: "p"}),
			op(2, 3, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(4, 5, linInput{op: linApprove, id: "p"}, linOutput{result: resStale}),
			op(6, 7, linInput{op: linApprove, id: "p"}, linOutput{result: resOK, ref: "a"}),
			op(8, 9, linInput{op: linApprove, id: "p"}, linOutput{result: resDecided}),
		}, porcupine.Ok},
		{"double decision", []porcupine.Operation{
			op(0, 1, linInput{op: linPark}, linOutput{result: resOK, id: "p"}),
			op(2, 3, linInput{op: linReject, id: "p"}, linOutput{result: resOK}),
			op(4, 5, linInput{op: linApprove, id: "p"}, linOutput{result: resOK}),
		}, porcupine.Illegal},
		{"rollback of a superseded version", []porcupine.Operation{
			op(0, 1, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(2, 3, linInput{op: linWrite}, linOutput{result: resOK, id: "b", ref: "a"}),
			op(4, 5, linInput{op: linRollback, id: "a"}, linOutput{result: resOK}),
		}, porcupine.Illegal},
		{"read of a rolled back version", []porcupine.Operation{
			op(0, 1, linInput{op: linWrite}, linOutput{result: resOK, id: "a"}),
			op(2, 3, linInput{op: linRollback, id: "a"}, linOutput{result: resOK}),
			op(4, 5, linInput{op: linRead}, linOutput{result: resOK, ref: "a"}),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(slotModel, tc.history, 5*time.Second); got != tc.want {
				t.Fatalf("check = %s, want %s", got, tc.want)
			}
		})
	}
}

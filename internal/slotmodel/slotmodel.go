// Package slotmodel checks that slot histories are linearizable: a model
// of one slot (DESIGN §1 rules 1, 3, 4 and 5) for porcupine, and a
// workload of concurrent writers, reviewers and rollbacks that drives real
// governors and checks their history against it. Package store runs it on
// Badger, package pgstore on instances sharing one PostgreSQL database.
package slotmodel

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
)

// Operations on one slot, as the model knows them.
const (
	OpWrite    = "write"    // a candidate policy applies
	OpPark     = "park"     // a candidate policy sends to review
	OpApprove  = "approve"  // approve a parked write (override)
	OpReject   = "reject"   // reject a parked write
	OpRollback = "rollback" // roll back one record (no cascade)
	OpRead     = "read"     // the slot's active record
)

// Results of a call.
const (
	ResOK       = "ok"
	ResStale    = "stale"
	ResDecided  = "already_decided"
	ResConflict = "conflict"
)

// Input is a call on one slot.
type Input struct {
	Slot int
	Op   string
	ID   string // the record approved, rejected or rolled back
}

// Output is what a call returned.
type Output struct {
	Result string
	ID     string // write, park: the new record
	// Ref is what the call saw of the slot's head: what a write or an
	// approval replaced, the head a parked write expects, the head a
	// rollback restored, the head a read found ("" for none).
	Ref string
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
	s, in, out := state.(slotState), input.(Input), output.(Output)
	head := s.head()
	switch in.Op {
	case OpWrite:
		return out.Result == ResOK && out.Ref == head, s.push(out.ID)
	case OpPark:
		p := s.parked()
		p[out.ID] = head
		return out.Result == ResOK && out.Ref == head, s.withParked(p)
	case OpApprove:
		p := s.parked()
		expected, ok := p[in.ID]
		switch {
		case !ok:
			return out.Result == ResDecided, s
		case expected == head:
			delete(p, in.ID)
			return out.Result == ResOK && out.Ref == head, s.withParked(p).push(in.ID)
		default:
			p[in.ID] = head
			return out.Result == ResStale, s.withParked(p)
		}
	case OpReject:
		p := s.parked()
		if _, ok := p[in.ID]; !ok {
			return out.Result == ResDecided, s
		}
		delete(p, in.ID)
		return out.Result == ResOK, s.withParked(p)
	case OpRollback:
		if head == "" || head != in.ID {
			return out.Result == ResConflict, s
		}
		next := s.pop()
		return out.Result == ResOK && out.Ref == next.head(), next
	case OpRead:
		return out.Result == ResOK && out.Ref == head, s
	}
	return false, s
}

// Model is the slot model for porcupine, partitioned by slot.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		bySlot := map[int][]porcupine.Operation{}
		for _, op := range history {
			s := op.Input.(Input).Slot
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
		in, out := input.(Input), output.(Output)
		return fmt.Sprintf("slot %d %s(%s) -> %s %s ref=%s", in.Slot, in.Op, in.ID, out.Result, out.ID, out.Ref)
	},
	DescribeState: func(state any) string {
		s := state.(slotState)
		return fmt.Sprintf("chain [%s] pending [%s]", s.chain, s.pending)
	},
}

// Policy applies or parks by the summary's first word.
func Policy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if strings.HasPrefix(in.Candidate.Summary, "park") {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride},
			Reasons: []memory.Reason{{Rule: "lin_park", Message: "parked by the test"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
		Reasons: []memory.Reason{{Rule: "lin_apply", Message: "applied by the test"}}}, nil
}

// slotClient runs calls on one slot and logs each with its times.
type slotClient struct {
	gov   *memory.Governor
	slot  int
	base  time.Time
	mu    *sync.Mutex
	ops   *[]porcupine.Operation
	known *known
}

// known are the record ids clients have seen, to pick calls from.
type known struct {
	mu      sync.Mutex
	parked  []string
	applied []string
}

func (k *known) pick(rng *rand.Rand, parked bool) string {
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

func (k *known) add(id string, parked bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if parked {
		k.parked = append(k.parked, id)
	} else {
		k.applied = append(k.applied, id)
	}
}

// call runs one call, logs it and returns its output.
func (c *slotClient) call(t *testing.T, client int, in Input) Output {
	t.Helper()
	ctx := context.Background()
	subject := fmt.Sprintf("lin-%d", c.slot)
	call := time.Since(c.base).Nanoseconds()
	var out Output
	var err error
	switch in.Op {
	case OpWrite, OpPark:
		var res *memory.SubmitResult
		res, err = c.gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: "fact",
			Summary: fmt.Sprintf("%s by client %d at %d", in.Op, client, call)})
		if err == nil {
			want := map[string]memory.Outcome{OpWrite: memory.OutcomeApplied, OpPark: memory.OutcomeParked}[in.Op]
			if res.Outcome != want {
				t.Errorf("%s: outcome %s, want %s", in.Op, res.Outcome, want)
				return out
			}
			out = Output{Result: ResOK, ID: res.Record.ID, Ref: res.Record.Supersedes}
			if in.Op == OpPark {
				out.Ref = res.Record.ExpectedHead
			}
			c.known.add(res.Record.ID, in.Op == OpPark)
		}
	case OpApprove:
		var rec *memory.Record
		rec, err = c.gov.Approve(ctx, in.ID, memory.Review{By: "lin", Mode: memory.ModeOverride})
		if err == nil {
			out = Output{Result: ResOK, Ref: rec.Supersedes}
			c.known.add(in.ID, false)
		}
	case OpReject:
		_, err = c.gov.Reject(ctx, in.ID, memory.Review{By: "lin"})
		if err == nil {
			out = Output{Result: ResOK}
		}
	case OpRollback:
		var res *memory.RollbackResult
		res, err = c.gov.Rollback(ctx, in.ID, false, "lin", "lin")
		if err == nil {
			out = Output{Result: ResOK}
			if res.Restored != nil {
				out.Ref = res.Restored.ID
			}
		}
	case OpRead:
		var rec *memory.Record
		rec, err = c.gov.Get(ctx, memory.KeyedSlotID(subject, "fact"))
		switch {
		case err == nil:
			out = Output{Result: ResOK, Ref: rec.ID}
		case memory.ErrorCode(err) == memory.ENOTFOUND:
			out, err = Output{Result: ResOK}, nil
		}
	}
	if err != nil {
		switch code := memory.ErrorCode(err); code {
		case memory.ESTALE, memory.EDECIDED, memory.ECONFLICT:
			out = Output{Result: code}
		default:
			t.Errorf("%s(%s): %v", in.Op, in.ID, err)
			return out
		}
	}
	ret := time.Since(c.base).Nanoseconds()
	c.mu.Lock()
	*c.ops = append(*c.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	c.mu.Unlock()
	return out
}

// Check drives concurrent writers, reviewers and rollbacks on two slots
// through govs (governors built with Policy, on one store or on instances
// sharing one database; the clients of a slot take turns among them), logs
// every call with its invocation and response times, and fails t unless
// porcupine finds the history linearizable on Model.
func Check(t *testing.T, govs []*memory.Governor) {
	t.Helper()
	const slots, clientsPerSlot, callsPerClient = 2, 5, 30
	var mu sync.Mutex
	var ops []porcupine.Operation
	base := time.Now()
	var wg sync.WaitGroup
	for s := range slots {
		seen := &known{}
		for c := range clientsPerSlot {
			client := s*clientsPerSlot + c
			lc := &slotClient{gov: govs[client%len(govs)], slot: s, base: base, mu: &mu, ops: &ops, known: seen}
			rng := rand.New(rand.NewPCG(uint64(client), 8))
			wg.Go(func() {
				for range callsPerClient {
					in := Input{Slot: s}
					switch x := rng.IntN(100); {
					case x < 25:
						in.Op = OpWrite
					case x < 45:
						in.Op = OpPark
					case x < 65:
						in.Op, in.ID = OpApprove, lc.known.pick(rng, true)
					case x < 72:
						in.Op, in.ID = OpReject, lc.known.pick(rng, true)
					case x < 80:
						// Roll back the head a read just saw (others may
						// have moved it since: then it conflicts).
						in.Op, in.ID = OpRollback, lc.call(t, client, Input{Slot: s, Op: OpRead}).Ref
					case x < 85:
						in.Op, in.ID = OpRollback, lc.known.pick(rng, false)
					default:
						in.Op = OpRead
					}
					if in.Op != OpWrite && in.Op != OpPark && in.Op != OpRead && in.ID == "" {
						in.Op = OpRead // nothing to decide or roll back yet
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
		count[op.Input.(Input).Op+"/"+op.Output.(Output).Result]++
	}
	t.Logf("%d calls: %v", len(ops), count)
	for _, must := range []string{"write/ok", "park/ok", "approve/ok", "rollback/ok", "read/ok"} {
		if count[must] == 0 {
			t.Errorf("no %s call in the history: it proves less than it should", must)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(Model, ops, 30*time.Second)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("memgate-linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(Model, info, path); err != nil {
			t.Logf("visualization: %v", err)
		}
		t.Fatalf("slot histories are %s; visualization in %s", res, path)
	}
}

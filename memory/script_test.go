package memory

// Scenario scripts for the governor, after etcd raft's interaction tests:
// each file in testdata/ is a sequence of commands (submit, approve,
// rollback, quarantine, ...) run against one Governor on an in-memory
// store, and after each one the script shows what the command answered and
// the state of every slot: its revision, active and pending versions, and
// the status of each version in its history. Run with -rewrite to
// regenerate the expected output after a deliberate change, then read the
// diff.
//
// Commands (arguments key=value; a submit's summary is its input text):
//
//	submit subject=S fact=F layer=L source=SRC run=R agent=A op=delete slot=rN
//	adopt  (as submit; Governor.Adopt)
//	approve rN [mode=append] [by=NAME]
//	reject rN [by=NAME]
//	rollback rN [cascade]
//	quarantine run=R | actor=A
//	restore subject=S at=T+Nm
//	mode shadow|enforce (Governor.SetPolicyMode)
//	state
//
// Records are named r1, r2, ... in the order they were created; time is
// T+Nm, one minute more for each command.

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

func TestScripts(t *testing.T) {
	// The scripts only: testdata/fuzz holds the fuzzers' corpora.
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata (%v)", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			datadriven.RunTest(t, path, newScript(t).run)
		})
	}
}

var scriptT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

type script struct {
	t      *testing.T
	st     *memStore
	gov    *Governor
	policy *scriptPolicy
	now    time.Time
	ids    int
}

func newScript(t *testing.T) *script {
	h := &script{t: t, st: newMemStore(), policy: &scriptPolicy{}, now: scriptT0}
	h.gov = NewGovernor(Options{Store: h.st, Classifier: h.policy, Secrets: fakeScanner{},
		Now:   func() time.Time { return h.now },
		NewID: func() string { h.ids++; return fmt.Sprintf("id%06d", h.ids) }})
	return h
}

// scriptPolicy is the two-tier rule in small: policy-layer writes,
// overrides or deletes of an active state, and a model's inferences wait
// for a human; the rest applies. It places text that reads as a rule ("must", "never") in the
// policy layer, whatever layer the writer declared.
type scriptPolicy struct{ evaluations int }

func (p *scriptPolicy) Place(_ context.Context, in *PolicyInput) (Placement, error) {
	text := strings.ToLower(in.Candidate.Summary)
	if strings.Contains(text, "must") || strings.Contains(text, "never") {
		return Placement{Layer: LayerPolicy}, nil
	}
	return Placement{}, nil
}

func (p *scriptPolicy) Classify(_ context.Context, in *PolicyInput) (Decision, error) {
	p.evaluations++
	c := in.Candidate
	switch {
	case c.Layer == LayerPolicy:
		return Decision{Risk: RiskHigh, Action: ActionReview, Categories: []string{CategoryStrategy},
			Reasons: []Reason{{Rule: "strategy", Message: "strategy constraints need a human"}}}, nil
	case c.Layer == LayerState && in.Current != nil && (in.Op == OpDelete || !in.Current.SameContent(c)):
		return Decision{Risk: RiskHigh, Action: ActionReview, Categories: []string{CategoryStateOverride},
			Reasons: []Reason{{Rule: "override", Message: "overrides a key fact"}}}, nil
	case c.CandidateSource == SourceInference:
		return Decision{Risk: RiskMedium, Action: ActionReview, Categories: []string{CategoryInference},
			Reasons: []Reason{{Rule: "inference", Message: "a model's inference needs a human"}}}, nil
	}
	return Decision{Risk: RiskLow, Action: ActionApply, Reasons: []Reason{{Rule: "low_risk", Message: "low risk"}}}, nil
}

func (h *script) run(t *testing.T, d *datadriven.TestData) string {
	h.now = h.now.Add(time.Minute)
	ctx := context.Background()
	var out string
	var err error
	switch d.Cmd {
	case "submit", "adopt":
		c := h.candidate(t, d)
		before := h.policy.evaluations
		var res *SubmitResult
		if d.Cmd == "adopt" {
			res, err = h.gov.Adopt(ctx, c)
		} else {
			res, err = h.gov.Submit(ctx, c)
		}
		if err == nil {
			out = fmt.Sprintf("%s %s (policy evaluated %d×)", res.Outcome, h.label(res.Record.ID), h.policy.evaluations-before)
			if dec := res.Record.Decision; dec != nil && res.Outcome != OutcomeUnchanged {
				out += fmt.Sprintf(": %s", rules(dec))
			}
		}
	case "approve", "reject":
		id := h.recordArg(t, d)
		rv := Review{By: "alice", Route: "cli"}
		d.MaybeScanArgs(t, "by", &rv.By)
		var mode string
		if d.MaybeScanArgs(t, "mode", &mode) {
			rv.Mode = ReviewMode(mode)
		}
		var rec *Record
		if d.Cmd == "approve" {
			rec, err = h.gov.Approve(ctx, id, rv)
		} else {
			rec, err = h.gov.Reject(ctx, id, rv)
		}
		if err == nil {
			out = fmt.Sprintf("%s %s", rec.Status, h.label(rec.ID))
		} else if rec != nil {
			out = fmt.Sprintf("%s %s, now expecting %s", rec.Status, h.label(rec.ID), h.label(rec.ExpectedHead))
		}
	case "rollback":
		var res *RollbackResult
		res, err = h.gov.Rollback(ctx, h.recordArg(t, d), d.HasArg("cascade"), "script", "alice")
		if err == nil {
			var ids []string
			for _, r := range res.RolledBack {
				ids = append(ids, r.ID)
			}
			out = "rolled back " + h.labels(ids)
			if res.Restored != nil {
				out += ", restored " + h.label(res.Restored.ID)
			}
		}
	case "quarantine":
		kind, id := "run", ""
		if !d.MaybeScanArgs(t, "run", &id) {
			kind = "actor"
			d.ScanArgs(t, "actor", &id)
		}
		var res *BulkResult
		if res, err = h.gov.Quarantine(ctx, kind, id, "script", "alice"); err == nil {
			out = h.bulk(res)
		}
	case "restore":
		var subject, at string
		d.ScanArgs(t, "subject", &subject)
		d.ScanArgs(t, "at", &at)
		var res *BulkResult
		if res, err = h.gov.Restore(ctx, subject, h.parseTime(t, at), "script", "alice"); err == nil {
			out = h.bulk(res)
		}
	case "mode":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "mode needs shadow or enforce")
		}
		if err = h.gov.SetPolicyMode(PolicyMode(d.CmdArgs[0].Key)); err == nil {
			out = "policy mode " + string(h.gov.PolicyMode())
		}
	case "state":
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	if err != nil {
		out = fmt.Sprintf("error %s: %s", ErrorCode(err), h.relabel(err.Error()))
	}
	return fmt.Sprintf("T+%s %s\n%s", h.since(h.now), out, h.state(t))
}

func rules(d *Decision) string {
	var r []string
	for _, x := range d.Reasons {
		r = append(r, x.Rule)
	}
	s := fmt.Sprintf("%s/%s [%s]", d.Action, d.Risk, strings.Join(r, " "))
	if d.Shadow != nil {
		s += fmt.Sprintf(", shadowed by %s: %s instead [%s]", d.Shadow.By, d.Shadow.Action, strings.Join(d.Shadow.Rules, " "))
	}
	return s
}

func (h *script) candidate(t *testing.T, d *datadriven.TestData) Candidate {
	c := Candidate{Summary: strings.TrimSpace(d.Input)}
	var layer, op, source, slot string
	d.MaybeScanArgs(t, "subject", &c.SubjectID)
	d.MaybeScanArgs(t, "fact", &c.FactType)
	d.MaybeScanArgs(t, "run", &c.Actor.RunID)
	d.MaybeScanArgs(t, "agent", &c.Actor.AgentID)
	if d.MaybeScanArgs(t, "layer", &layer) {
		c.Layer = Layer(layer)
	}
	if d.MaybeScanArgs(t, "op", &op) {
		c.Op = Op(op)
	}
	if d.MaybeScanArgs(t, "source", &source) {
		c.CandidateSource = Source(source)
	}
	if d.MaybeScanArgs(t, "slot", &slot) {
		c.SlotID = h.slotOfLabel(t, slot)
	}
	return c
}

// records returns every record, oldest first: their labels' order.
func (h *script) records() []*Record {
	var out []*Record
	_ = h.st.View(context.Background(), func(tx ReadTx) error {
		out = tx.(*memTx).records(func(*Record) bool { return true })
		return nil
	})
	return out
}

func (h *script) label(id string) string {
	if id == "" {
		return "nothing"
	}
	for i, r := range h.records() {
		if r.ID == id {
			return fmt.Sprintf("r%d", i+1)
		}
	}
	return id
}

func (h *script) labels(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	var out []string
	for _, id := range ids {
		out = append(out, h.label(id))
	}
	return strings.Join(out, " ")
}

// relabel replaces record ids in an error message by their labels.
func (h *script) relabel(s string) string {
	recs := h.records()
	for i := len(recs) - 1; i >= 0; i-- {
		s = strings.ReplaceAll(s, recs[i].ID, fmt.Sprintf("r%d", i+1))
	}
	return s
}

func (h *script) recordArg(t *testing.T, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) != 0 {
		d.Fatalf(t, "%s needs a record label first", d.Cmd)
	}
	return h.idOf(t, d.CmdArgs[0].Key)
}

func (h *script) idOf(t *testing.T, label string) string {
	n, err := strconv.Atoi(strings.TrimPrefix(label, "r"))
	recs := h.records()
	if err != nil || n < 1 || n > len(recs) {
		t.Fatalf("no record %s", label)
	}
	return recs[n-1].ID
}

func (h *script) slotOfLabel(t *testing.T, label string) string {
	id := h.idOf(t, label)
	for _, r := range h.records() {
		if r.ID == id {
			return r.SlotID
		}
	}
	return ""
}

func (h *script) bulk(res *BulkResult) string {
	return fmt.Sprintf("rolled back %s; retracted %s; rejected %s",
		h.labels(res.RolledBack), h.labels(res.Retracted), h.labels(res.Rejected))
}

func (h *script) since(at time.Time) string {
	return strconv.Itoa(int(at.Sub(scriptT0)/time.Minute)) + "m"
}

func (h *script) parseTime(t *testing.T, s string) time.Time {
	m, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, "T+"), "m"))
	if err != nil {
		t.Fatalf("time %q: want T+<minutes>m", s)
	}
	return scriptT0.Add(time.Duration(m) * time.Minute)
}

// state prints every slot: name and revision, then its versions oldest
// first with status, layer, risk and text, and where each came from.
func (h *script) state(t *testing.T) string {
	var slots []*Slot
	var b strings.Builder
	recs := h.records()
	_ = h.st.View(context.Background(), func(tx ReadTx) error {
		slots = all[Slot](tx.(*memTx).s.slots)
		return nil
	})
	slices.SortFunc(slots, func(a, b *Slot) int {
		return cmp.Or(cmp.Compare(a.SubjectID, b.SubjectID), cmp.Compare(a.FactType, b.FactType), cmp.Compare(a.ID, b.ID))
	})
	for _, s := range slots {
		name := s.SubjectID + "/" + s.FactType
		if s.FactType == "" {
			name = s.SubjectID + " (own slot)"
		}
		var active, pending []string
		var lines []string
		for _, r := range recs {
			if r.SlotID != s.ID {
				continue
			}
			l := h.label(r.ID)
			switch r.Status {
			case StatusActive:
				active = append(active, l)
			case StatusPending:
				pending = append(pending, l)
			}
			text := strconv.Quote(r.Summary)
			if r.Op == OpDelete {
				text = "(delete)"
			}
			line := fmt.Sprintf("  %s %s %s/%s %s", l, r.Status, r.Layer, r.RiskLevel, text)
			if r.Supersedes != "" {
				line += " replaced " + h.label(r.Supersedes)
			}
			if r.Status == StatusPending {
				line += " expects " + h.label(r.ExpectedHead)
			}
			lines = append(lines, line)
		}
		fmt.Fprintf(&b, "%s rev=%d active=[%s] pending=[%s]\n%s\n", name, s.Rev,
			strings.Join(active, " "), strings.Join(pending, " "), strings.Join(lines, "\n"))
	}
	if len(slots) == 0 {
		b.WriteString("no slots\n")
	}
	return b.String()
}

package memory

import (
	"context"
	"slices"
	"time"
)

// PolicyMode says whether the governor enforces policy's parks and
// rejections or only records them (shadow mode, for adoption: run memgate
// next to an agent for a week and see what it would have stopped).
type PolicyMode string

const (
	PolicyEnforce PolicyMode = "enforce"
	PolicyShadow  PolicyMode = "shadow"
)

// PolicyModes lists every valid mode.
var PolicyModes = []PolicyMode{PolicyEnforce, PolicyShadow}

// ParsePolicyMode reads a mode; "" is enforce. Errors: EINVALID.
func ParsePolicyMode(s string) (PolicyMode, error) {
	switch m := PolicyMode(s); m {
	case "":
		return PolicyEnforce, nil
	case PolicyEnforce, PolicyShadow:
		return m, nil
	}
	return "", Errorf(EINVALID, "policy mode must be %q or %q, not %q", PolicyEnforce, PolicyShadow, s)
}

// Where a shadow comes from (Shadow.By).
const (
	ShadowByMode = "mode" // the governor runs in shadow mode
	ShadowByRule = "rule" // the policy's data marks the rules "mode": "shadow"
)

// Shadow is the part of a decision that was not enforced.
type Shadow struct {
	// Action is what the governor did instead of the decision's Action:
	// apply, or review where a rule that is not shadowed still parks.
	Action Action `json:"action"`
	// Rules are the rules whose park or rejection was not enforced: the
	// decision's rules in shadow mode, the shadowed rules that fired when
	// the policy's data shadows them.
	Rules []string `json:"rules"`
	By    string   `json:"by"` // ShadowByMode or ShadowByRule
}

// RuleJudgeSecret is the default policy's rule for a credential the judge
// (a model) read in a write's text; like RuleSecretDetected, it is never
// shadowed.
const RuleJudgeSecret = "judge_secret"

// SetPolicyMode switches between enforcing and shadowing policy, at once
// and without a restart: the next decision taken uses the new mode (a
// write already decided keeps its decision).
func (g *Governor) SetPolicyMode(m PolicyMode) error {
	m, err := ParsePolicyMode(string(m))
	if err != nil {
		return err
	}
	if g.mode.Swap(m == PolicyShadow) != (m == PolicyShadow) {
		g.log.Info("policy mode changed", "mode", m)
	}
	g.obs.PolicyMode(m)
	return nil
}

// PolicyMode returns the mode decisions are taken in now.
func (g *Governor) PolicyMode() PolicyMode {
	if g.mode.Load() {
		return PolicyShadow
	}
	return PolicyEnforce
}

// shadow applies the mode to a decision. A decision that parks or
// rejects is applied instead in shadow mode, and one the policy shadows
// rule by rule keeps the policy's shadow, except that a secret is always
// rejected (DESIGN §1: secrets are never stored), personal data gets what
// policy decided for it, and a policy failure always parks (rule 8, fail
// closed: there is no verdict to shadow).
func (g *Governor) shadow(d Decision) Decision {
	if d.Action == ActionApply || !shadowable(&d) {
		d.Shadow = nil
		return d
	}
	if g.mode.Load() {
		rules := make([]string, 0, len(d.Reasons))
		for _, r := range d.Reasons {
			if !slices.Contains(rules, r.Rule) {
				rules = append(rules, r.Rule)
			}
		}
		d.Shadow = &Shadow{Action: ActionApply, Rules: rules, By: ShadowByMode}
	}
	return d
}

// shadowable reports whether a decision may be shadowed at all. Personal
// data (RulePIIDetected) is not: shadow mode would make it active memory
// the agent reads, which no operator setting of pii_detected asked for.
func shadowable(d *Decision) bool {
	if d.PolicyError != "" || len(d.Redact) > 0 {
		return false
	}
	for _, r := range d.Reasons {
		if r.Rule == RuleSecretDetected || r.Rule == RuleJudgeSecret || r.Rule == RulePIIDetected {
			return false
		}
	}
	return true
}

// ShadowItem is a write policy would have parked or rejected that was
// treated otherwise because its rules were shadowed.
type ShadowItem struct {
	EventID   string    `json:"eventId"`
	At        time.Time `json:"at"`
	RecordID  string    `json:"recordId"`
	SlotID    string    `json:"slotId"`
	SubjectID string    `json:"subjectId"`
	FactType  string    `json:"factType,omitempty"`
	Summary   string    `json:"summary"`
	Risk      Risk      `json:"risk"`
	// Would is what policy said (review or reject); Did what was done.
	Would  Action   `json:"would"`
	Did    Action   `json:"did"`
	Rules  []string `json:"rules"`
	By     string   `json:"by"`     // ShadowByMode or ShadowByRule
	Status Status   `json:"status"` // the record's status now
}

// ShadowPage is a page of shadowed writes.
type ShadowPage struct {
	Items []*ShadowItem `json:"items"`
	Count int           `json:"count"`
	// Next is the after of the following page; empty on the last one.
	Next string `json:"next,omitempty"`
}

// Shadowed lists the writes applied (or parked instead of rejected)
// because their rules were shadowed, oldest first or newest first, at
// most limit (1 to 10000) after the cursor after (an event id: the Next
// of the previous page; "" starts at the oldest or the newest). The store
// indexes these events when it appends them, so a page costs its own
// items, not a scan of the audit log.
func (g *Governor) Shadowed(ctx context.Context, after string, limit int, newest bool) (*ShadowPage, error) {
	if limit < 1 || limit > 10000 {
		return nil, Errorf(EINVALID, "limit must be between 1 and 10000")
	}
	if err := CheckLookupID("after", after); err != nil {
		return nil, err
	}
	page := &ShadowPage{Items: []*ShadowItem{}}
	err := g.store.View(ctx, func(tx ReadTx) error {
		var evs []*Event
		err := tx.ScanShadowed(after, newest, func(e *Event) bool {
			if len(evs) == limit {
				page.Next = evs[limit-1].ID
				return false
			}
			evs = append(evs, e)
			return true
		})
		if err != nil {
			return err
		}
		for _, e := range evs {
			it := &ShadowItem{EventID: e.ID, At: e.At, RecordID: e.RecordID, SlotID: e.SlotID, SubjectID: e.SubjectID}
			if d := e.Decision; d != nil && d.Shadow != nil {
				it.Would, it.Did, it.Rules, it.By, it.Risk = d.Action, d.Shadow.Action, d.Shadow.Rules, d.Shadow.By, d.Risk
			}
			rec, err := tx.Record(e.RecordID)
			if err != nil {
				return err
			}
			it.Summary, it.FactType, it.Status = rec.Summary, rec.FactType, rec.Status
			page.Items = append(page.Items, it)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Count = len(page.Items)
	return page, nil
}

// IsShadowed reports whether an audit event records a write whose
// decision was shadowed: the events a store indexes for Shadowed.
func IsShadowed(e *Event) bool {
	return (e.Type == EventApplied || e.Type == EventParked) && e.Decision != nil && e.Decision.Shadow != nil
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// Write outcomes as the MCP surface reports them (in _meta and in the text).
const (
	outApplied   = "applied"
	outUnchanged = "unchanged"
	outParked    = "pending_review"
	outRejected  = "rejected"
	outFailed    = "failed" // the governor refused the call itself (e.g. nothing left to delete)
)

// writeResult is what happened to one governed write of a tool call.
type writeResult struct {
	What     string `json:"what"`
	Outcome  string `json:"outcome"`
	RecordID string `json:"recordId,omitempty"` // the submitted version (the event id)
	MemoryID string `json:"memoryId,omitempty"` // the slot's stable id
	Reason   string `json:"reason,omitempty"`
}

// report collects the writes of one tool call, so the answer can say, in
// the agent's terms, what applied, what waits for a human and what policy
// refused.
type report struct {
	writes []writeResult
}

// submit runs one candidate through the governor. Domain refusals of that
// one write (bad input, a delete of something already gone) are recorded as
// failed and the call goes on; storage failures abort the call.
func (s *Server) submit(ctx context.Context, rep *report, actor memory.Actor, what string, c memory.Candidate) (*memory.SubmitResult, error) {
	c.Actor = actor
	if c.CandidateSource == "" {
		c.CandidateSource = memory.SourceTool
	}
	res, err := s.gov.Submit(ctx, c)
	if err != nil {
		if memory.ErrorCode(err) == memory.EINTERNAL {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		rep.writes = append(rep.writes, writeResult{What: what, Outcome: outFailed, Reason: memory.ErrorMessage(err)})
		return nil, nil
	}
	w := writeResult{What: what, RecordID: res.Record.ID, MemoryID: res.Record.SlotID}
	switch res.Outcome {
	case memory.OutcomeApplied:
		w.Outcome = outApplied
	case memory.OutcomeUnchanged:
		w.Outcome, w.RecordID = outUnchanged, ""
	case memory.OutcomeParked:
		w.Outcome, w.Reason = outParked, reasonOf(res.Record)
	case memory.OutcomeRefused:
		// A refused write's text is not repeated: it may hold a secret,
		// and memgate keeps none of it either.
		w.Outcome, w.Reason, w.What = outRejected, reasonOf(res.Record), proxy.Withheld
	}
	rep.writes = append(rep.writes, w)
	return res, nil
}

// reasonOf lists the policy rules that fired for a record, for the agent:
// a decision may carry several (the one that rejected or parked it among
// low-risk ones), so all are named.
func reasonOf(r *memory.Record) string {
	if r.Decision == nil {
		return ""
	}
	parts := make([]string, 0, len(r.Decision.Reasons))
	for _, rs := range r.Decision.Reasons {
		p := rs.Message
		if rs.Rule != "" {
			p += " (rule " + rs.Rule + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func (rep *report) count(outcome string) int {
	n := 0
	for _, w := range rep.writes {
		if w.Outcome == outcome {
			n++
		}
	}
	return n
}

// refused reports whether any write was rejected by policy or refused by
// the governor: the call then answers as an error, saying why.
func (rep *report) refused() bool { return rep.count(outRejected)+rep.count(outFailed) > 0 }

// notes says in words what did not apply at once; "" when everything did.
// A parked write is never called denied: it waits, with its id.
func (rep *report) notes() string {
	var b strings.Builder
	if n := rep.count(outParked); n > 0 {
		b.WriteString(proxy.PendingHeader(n, "get_event_status with the record id") + "\n")
		for _, w := range rep.writes {
			if w.Outcome == outParked {
				fmt.Fprintf(&b, "- %s: waits for review, record id %s", w.What, w.RecordID)
				if w.Reason != "" {
					fmt.Fprintf(&b, " (%s)", w.Reason)
				}
				b.WriteString("\n")
			}
		}
	}
	if n := rep.count(outRejected) + rep.count(outFailed); n > 0 {
		b.WriteString(proxy.RefusedHeader(n) + "\n")
		for _, w := range rep.writes {
			switch w.Outcome {
			case outRejected:
				fmt.Fprintf(&b, "- %s: policy refused it: %s (record id %s)\n", w.What, orUnknown(w.Reason), w.RecordID)
			case outFailed:
				fmt.Fprintf(&b, "- %s: not written: %s\n", w.What, w.Reason)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// result builds the tool result: text first (the structured output as
// indented JSON, as server-memory writes it, or a fixed message), then the
// notes about parked and refused writes, and every write's outcome in _meta
// under "memgate". A refusal sets isError; waiting never does.
func (rep *report) result(text string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if n := rep.notes(); n != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: n})
	}
	if len(rep.writes) > 0 {
		res.Meta = mcp.Meta{"memgate": map[string]any{"writes": rep.writes}}
	}
	res.IsError = rep.refused()
	return res
}

// indentJSON renders v as server-memory does (JSON.stringify(v, null, 2)).
func indentJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

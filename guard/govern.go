package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/guard/markdown"
	"github.com/memgate/memgate/memory"
)

// emptySettle is how long an emptied file is given to fill again before
// it is judged empty (a variable for tests).
var emptySettle = 200 * time.Millisecond

// govern compares a file with what memgate accepted of it and governs each
// change. Called with g.mu held.
func (g *Guard) govern(ctx context.Context, p string, since time.Time) {
	if err := g.governFile(ctx, p, since); err != nil {
		g.noteError(ctx, p, ReasonJudge, "judging a guarded file; it will be judged again", err)
	}
}

// read reads a guarded file beneath its workspace (fsafe.go).
func (g *Guard) read(p string) (*fileSnap, error) {
	root, rel, ok := g.locate(p)
	if !ok {
		return nil, fmt.Errorf("guard: %s is not under a guarded directory", escapeText(p))
	}
	return readBeneath(root, rel, g.o.MaxFileBytes)
}

func (g *Guard) governFile(ctx context.Context, p string, since time.Time) error {
	disk, err := g.read(p)
	if err != nil {
		return err // a refusal leaves state and file as they are
	}
	defer func() { disk.close() }()
	g.unrefuse(p)
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil {
		return err
	}
	if len(disk.data) == 0 && st != nil && st.Content != "" {
		// A tool that truncates and then writes shows an empty file for a
		// moment: judging that would delete every entry. Look again.
		time.Sleep(emptySettle)
		again, err := g.read(p)
		if err != nil {
			return err
		}
		disk.close()
		disk = again
	}
	if st == nil {
		if !disk.exists() {
			return nil
		}
		if !g.baselined[g.dirOf(p)] {
			return g.adopt(ctx, p, disk, since)
		}
		// A file that appeared after memgate began guarding its directory
		// is the agent's new writing: every entry is judged.
		st = &fileState{Path: p}
		if err := g.remember(ctx, p); err != nil {
			return err
		}
	}
	g.addSlots(st)
	if string(disk.data) == st.Content && (disk.exists() || st.Content == "") {
		return g.settled(ctx, st) // unchanged, or memgate's own rewrite
	}
	next, err := g.decide(ctx, p, st, disk.data)
	if err != nil {
		return err
	}
	// Not done (the agent outran the rewrite): its last write is judged
	// at its next event.
	_, err = g.settle(ctx, p, st, disk, next, since, g.judging(ctx, p, st))
	return err
}

// decide judges content, the agent's version of a file, against what
// memgate accepted of it (st), governs each change, saves what it decided
// in st and returns what the file must read: content with the changes it
// does not keep undone. It fails closed: a change it cannot submit is
// undone (counted, logged), and so is the whole change when it cannot
// tell a repeat of a parked change from a new one.
func (g *Guard) decide(ctx context.Context, p string, st *fileState, content []byte) ([]byte, error) {
	old, now := markdown.Parse([]byte(st.Content)), markdown.Parse(content)
	if len(now) > g.o.MaxEntries {
		return nil, refuse(ReasonTooMany, "%s has %d entries, over the guard's cap of %d", g.rel(p), len(now), g.o.MaxEntries)
	}
	plan := diff(old, now)
	if len(plan.Changes) == 0 && string(content) == st.Content {
		return content, nil
	}
	oldSlot := map[int]entryState{} // by Start in the old content
	for i, e := range old {
		if i < len(st.Entries) {
			oldSlot[e.Start] = st.Entries[i]
		}
	}
	pending, err := g.pendingOf(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		g.met.onError(ReasonPending)
		g.log.Error("cannot read the pending writes of a guarded file: its whole change is undone", "file", g.rel(p), "err", err)
		return markdown.Undo(content, now, plan), nil
	}
	undo := map[int]bool{}              // the changes to undo, by index in plan.Changes
	placed := map[string][]entryState{} // entry text -> slots, for the new accepted content
	keep := func(text string, e entryState) { placed[text] = append(placed[text], e) }
	// Entries that did not change keep their slots.
	changed := map[int]bool{}
	for _, c := range plan.Changes {
		if c.Old != nil {
			changed[c.Old.Start] = true
		}
	}
	for _, e := range old {
		if !changed[e.Start] {
			keep(e.Text, oldSlot[e.Start])
		}
	}
	// Parked changes stay until followDecisions has applied their
	// decision; only those still pending, or not yet seen undone in the
	// file, can be repeated.
	parked := slices.Clone(st.Parked)
	for ci, c := range plan.Changes {
		var prev entryState
		if c.Old != nil {
			prev = oldSlot[c.Old.Start]
		}
		// The same high-risk change again: undo it, do not announce it
		// twice. One the guard's undo has not landed for yet is its own
		// unfinished undo, not a repeat, whatever was decided meanwhile.
		if i := findParked(parked, pending, c); i >= 0 {
			if pending[parked[i].Record] != nil && !parked[i].Unsettled {
				parked[i].Repeats++
				g.met.onRepeat()
			}
			undo[ci] = true
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			continue
		}
		cand := g.candidate(p, c, prev.Slot)
		res, err := g.submit(ctx, cand, c, pending)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err // stopping: the file is judged again at the next start
			}
			// Fail closed: what cannot be judged does not stay.
			reason := ReasonSubmit
			if memory.ErrorCode(err) == memory.EINVALID {
				reason = ReasonInvalidEntry
			}
			g.met.onError(reason)
			e := c.New
			if e == nil {
				e = c.Old
			}
			g.log.Warn("undoing a change the guard could not submit", "file", g.rel(p), "line", e.Line,
				"change", kindName(c.Kind), "reason", reason, "err", err)
			undo[ci] = true
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			continue
		}
		switch res.Outcome {
		case memory.OutcomeApplied, memory.OutcomeUnchanged:
			if c.New != nil {
				keep(c.New.Text, entryState{Slot: res.Record.SlotID, Record: res.Record.ID})
				g.slots[res.Record.SlotID] = p
			}
		case memory.OutcomeParked:
			undo[ci] = true
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			pe := parkedEntry{Record: res.Record.ID, Kind: c.Kind, Slot: res.Record.SlotID, Unsettled: true}
			if c.New != nil {
				pe.Text, pe.Heading, pe.After = c.New.Text, c.New.Heading, before(now, c.New)
			}
			if c.Old != nil {
				pe.OldText = c.Old.Text
				if c.New == nil {
					pe.Heading = c.Old.Heading
				}
			}
			parked = append(parked, pe)
			g.slots[res.Record.SlotID] = p
			g.met.onRevert("parked")
			// Journal the park at once: should memgate stop before the file
			// is rewritten and the change be decided meanwhile, the next
			// judging knows this is its own unfinished undo, not a new change.
			j := *st
			j.Parked = parked
			if err := saveState(ctx, g.o.KV, &j); err != nil {
				g.log.Warn("journaling a parked change", "file", g.rel(p), "err", err)
			}
		case memory.OutcomeRefused:
			undo[ci] = true
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			g.met.onRevert("refused")
		}
	}
	next := content
	if len(undo) > 0 {
		next = markdown.Undo(content, now, plan.Select(func(i int, _ markdown.Change) bool { return undo[i] }))
	}
	st.Content, st.Entries, st.Parked = string(next), slotsOf(markdown.Parse(next), placed), parked
	// The state first: a crash before the file is rewritten leaves a
	// change the next judging recognises as parked and undoes again.
	if err := saveState(ctx, g.o.KV, st); err != nil {
		return nil, err
	}
	g.addSlots(st)
	return next, nil
}

// settle makes the file at p read next (decided about, st saved), without
// losing a write of the agent's (rewriter.run): redo says what the file
// must read instead when the agent's version is found there. It takes
// disk, the file as read, and closes it. done is false when the agent won
// every round (maxRaced): its last write stands, unsettled.
func (g *Guard) settle(ctx context.Context, p string, st *fileState, disk *fileSnap, next []byte, since time.Time, redo func(content []byte, ours bool) ([]byte, error), owed ...owedWrite) (done bool, err error) {
	root, rel, ok := g.locate(p)
	if !ok {
		disk.close()
		return false, fmt.Errorf("guard: %s is not under a guarded directory", escapeText(p))
	}
	rw := rewriter{root: root, rel: rel, max: g.o.MaxFileBytes,
		decide: redo,
		repaired: func(displaced bool) {
			g.met.onRepair()
			if displaced {
				g.log.Info("an agent write landed while the guard rewrote a file: put back on top and judged", "file", g.rel(p))
			}
		},
		hold: func(f *os.File, base []byte) { g.hold(p, f, base) }}
	done, wrote, err := rw.run(disk, next, owed)
	if err != nil || !done {
		return false, err
	}
	if wrote {
		g.met.observeRevert(time.Since(since))
	}
	return true, g.settled(ctx, st)
}

// judging is settle's redo where the file's change is the agent's: its
// version, found in the guard's way, is judged against what memgate
// accepted (st) in its turn.
func (g *Guard) judging(ctx context.Context, p string, st *fileState) func([]byte, bool) ([]byte, error) {
	return func(content []byte, _ bool) ([]byte, error) { return g.decide(ctx, p, st, content) }
}

// settled records that the file reads what memgate accepted: the undo of
// every parked change has landed, so from now on their decisions apply.
func (g *Guard) settled(ctx context.Context, st *fileState) error {
	dirty := false
	for i := range st.Parked {
		if st.Parked[i].Unsettled {
			st.Parked[i].Unsettled, dirty = false, true
		}
	}
	if !dirty {
		return nil
	}
	return saveState(ctx, g.o.KV, st)
}

// putBack puts a write of the agent's that the guard's rewrite displaced
// (made on top of base, the file as the guard had read it) on top of the
// file at p, and judges it.
func (g *Guard) putBack(ctx context.Context, p string, root int, rel string, base, agent []byte) error {
	disk, err := readBeneath(root, rel, g.o.MaxFileBytes)
	if err != nil {
		return err
	}
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil || st == nil {
		disk.close()
		return err
	}
	g.met.onRepair()
	g.log.Info("an agent write landed in a file the guard had replaced: put back on top and judged", "file", g.rel(p))
	next, err := g.decide(ctx, p, st, onTop(base, agent, disk.data))
	if err != nil {
		disk.close()
		return err
	}
	_, err = g.settle(ctx, p, st, disk, next, time.Now(), g.judging(ctx, p, st), owedWrite{base: base, agent: agent})
	return err
}

// onTop applies the agent's change from base to agent on top of onto (what
// the path holds now), entry by entry: an added entry is inserted where it
// stood (unless onto has it), a changed one replaced (or inserted), a
// removed one removed.
func onTop(base, agent, onto []byte) []byte {
	av := markdown.Parse(agent)
	out := onto
	texts := map[string]int{} // the entries of out, kept up to date without parsing it again
	for _, e := range markdown.Parse(out) {
		texts[e.Text]++
	}
	insert := func(e *markdown.Entry) {
		if texts[e.Text] == 0 {
			out = markdown.Insert(out, e.Heading, before(av, e), e.Text)
			texts[e.Text]++
		}
	}
	for _, c := range diff(markdown.Parse(base), av).Changes {
		switch c.Kind {
		case markdown.Added:
			insert(c.New)
		case markdown.Changed:
			if texts[c.Old.Text] > 0 {
				out, _ = markdown.Replace(out, c.Old.Text, c.New.Text)
				texts[c.Old.Text]--
				texts[c.New.Text]++
			} else {
				insert(c.New)
			}
		case markdown.Removed:
			if texts[c.Old.Text] > 0 {
				out, _ = markdown.Remove(out, c.Old.Text)
				texts[c.Old.Text]--
			}
		}
	}
	return out
}

// adopt takes a file seen for the first time as the baseline: its entries
// become active records without review (memory.Governor.Adopt), except
// secrets and entries the governor refuses as input, which are removed
// from the file and never stored. It takes disk and closes it.
func (g *Guard) adopt(ctx context.Context, p string, disk *fileSnap, since time.Time) error {
	content := disk.data
	now := markdown.Parse(content)
	if len(now) > g.o.MaxEntries {
		return refuse(ReasonTooMany, "%s has %d entries, over the guard's cap of %d", g.rel(p), len(now), g.o.MaxEntries)
	}
	placed := map[string][]entryState{}
	var undo markdown.Plan // built by hand: there is no older version to diff with
	for i := range now {
		c := markdown.Change{Kind: markdown.Added, New: &now[i]}
		cand := g.candidate(p, c, "")
		cand.Actor.RunID = BaselineRun // not undone with the changes of a run
		res, err := g.o.Gov.Adopt(ctx, cand)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			reason := ReasonSubmit
			if memory.ErrorCode(err) == memory.EINVALID {
				reason = ReasonInvalidEntry
			}
			g.met.onError(reason)
			g.log.Warn("removing an entry the guard could not adopt", "file", g.rel(p), "line", now[i].Line, "reason", reason, "err", err)
			undo.Changes = append(undo.Changes, c)
			continue
		}
		switch res.Outcome {
		case memory.OutcomeRefused:
			undo.Changes = append(undo.Changes, c)
			g.met.onRevert("refused")
		default:
			// Applied, unchanged, or parked where the slot already held
			// something (then the file shows the entry, as the agent wrote).
			placed[now[i].Text] = append(placed[now[i].Text], entryState{Slot: res.Record.SlotID, Record: res.Record.ID})
		}
	}
	next := content
	if len(undo.Changes) > 0 {
		next = markdown.Undo(content, now, undo)
	}
	st := &fileState{Path: p, Content: string(next), Entries: slotsOf(markdown.Parse(next), placed)}
	if err := saveState(ctx, g.o.KV, st); err != nil {
		return err
	}
	if err := g.remember(ctx, p); err != nil {
		return err
	}
	g.addSlots(st)
	g.log.Info("adopted a memory file as the baseline", "file", g.rel(p), "entries", len(st.Entries), "removed", len(undo.Changes))
	// Not done (the agent outran the rewrite): its last write is judged
	// at its next event.
	_, err := g.settle(ctx, p, st, disk, next, since, g.judging(ctx, p, st))
	return err
}

// candidate is the write a change stands for.
func (g *Guard) candidate(p string, c markdown.Change, slot string) memory.Candidate {
	rel := g.rel(p)
	e := c.New
	if e == nil {
		e = c.Old
	}
	heading := escapeText(headingText(e.Heading))
	// KeepApart: an entry is a line of the file, never merged with
	// another; Diff pairs an edited entry with its slot (Changed).
	cand := memory.Candidate{SubjectID: g.subject(p), CandidateSource: memory.SourceTool, KeepApart: true,
		Actor:    memory.Actor{Dialect: Dialect, AgentID: agentID(rel), RunID: g.runID, Client: "memgate-guard"},
		Evidence: memory.Evidence{SourceRef: fmt.Sprintf("%s:%d", rel, e.Line), Excerpt: "in " + rel + " under " + heading},
		Metadata: map[string]any{"file": rel, "heading": heading, "headingPath": e.Heading, "markdown": e.Text}}
	if b, err := json.Marshal(cand.Metadata); err != nil || len(b) > memory.MaxMetadataBytes {
		// The raw Markdown is a nicety (a rollback puts the very bytes
		// back; else the summary as an item): not worth refusing the entry.
		delete(cand.Metadata, "markdown")
	}
	switch c.Kind {
	case markdown.Added:
		cand.Summary = e.Summary()
	case markdown.Changed:
		cand.Summary, cand.SlotID = e.Summary(), slot
	case markdown.Removed:
		cand.Op, cand.SlotID = memory.OpDelete, slot
		cand.Metadata = nil
	}
	if cand.Summary == "" && cand.Op != memory.OpDelete {
		cand.Summary = e.Text // a block of only markup: keep it as written
	}
	return cand
}

// submit governs one change. A change of an entry whose slot is gone (it
// was rolled back, or deleted elsewhere) is a new entry; a removal of one
// is accepted as it is.
func (g *Guard) submit(ctx context.Context, cand memory.Candidate, c markdown.Change, pending map[string]*memory.Record) (*memory.SubmitResult, error) {
	// A crash between parking and saving the state leaves the change in
	// the file with its record already pending: find that record instead
	// of parking the change twice.
	op := cand.Op
	if op == "" {
		op = memory.OpWrite // as Normalize sets it
	}
	for _, r := range pending {
		if r.Op == op && r.Summary == cand.Summary && (cand.SlotID == "" || r.SlotID == cand.SlotID) {
			return &memory.SubmitResult{Outcome: memory.OutcomeParked, Record: r}, nil
		}
	}
	if cand.SlotID == "" && c.Kind == markdown.Removed {
		return &memory.SubmitResult{Outcome: memory.OutcomeApplied, Record: &memory.Record{}}, nil
	}
	res, err := g.o.Gov.Submit(ctx, cand)
	if memory.ErrorCode(err) == memory.ENOTFOUND && cand.SlotID != "" {
		if c.Kind == markdown.Removed {
			return &memory.SubmitResult{Outcome: memory.OutcomeApplied, Record: &memory.Record{}}, nil
		}
		cand.SlotID = ""
		res, err = g.o.Gov.Submit(ctx, cand)
	}
	return res, err
}

// pendingOf returns the pending records of the guard's writes to a file, by
// id.
func (g *Guard) pendingOf(ctx context.Context, p string) (map[string]*memory.Record, error) {
	agent := agentID(g.rel(p))
	recs, err := g.o.Gov.Pending(ctx, func(r *memory.Record) bool {
		return r.Actor.Dialect == Dialect && r.Actor.AgentID == agent
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*memory.Record, len(recs))
	for _, r := range recs {
		out[r.ID] = r
	}
	return out, nil
}

// findParked returns the index of the parked change c repeats, or -1: one
// still pending, or one whose undo has not landed in the file yet.
func findParked(parked []parkedEntry, pending map[string]*memory.Record, c markdown.Change) int {
	for i, pe := range parked {
		if pe.Kind != c.Kind || pending[pe.Record] == nil && !pe.Unsettled {
			continue
		}
		if (c.New == nil || pe.Text == c.New.Text) && (c.Old == nil || pe.OldText == c.Old.Text) {
			return i
		}
	}
	return -1
}

// before is the text of the entry before e in entries ("" if e is first
// in its section).
func before(entries []markdown.Entry, e *markdown.Entry) string {
	prev := ""
	for _, x := range entries {
		if x.Start == e.Start {
			return prev
		}
		if slices.Equal(x.Heading, e.Heading) {
			prev = x.Text
		} else {
			prev = ""
		}
	}
	return prev
}

// slotsOf ties each entry of content to a slot, by text, in order.
func slotsOf(entries []markdown.Entry, placed map[string][]entryState) []entryState {
	out := make([]entryState, len(entries))
	for i, e := range entries {
		if q := placed[e.Text]; len(q) > 0 {
			out[i], placed[e.Text] = q[0], q[1:]
		}
	}
	return out
}

func kindName(k markdown.ChangeKind) string {
	switch k {
	case markdown.Added:
		return "an added entry in"
	case markdown.Changed:
		return "a changed entry in"
	case markdown.Removed:
		return "a removed entry in"
	}
	return "a change in"
}

// diff compares two versions of a file's entries, pairing an entry with
// its edit also when the edit changed most of its words but states a new
// value of the same fact (facts.Compare, the fact matcher's comparison):
// an edited value is an update of the entry's slot, judged as an override.
func diff(old, new []markdown.Entry) markdown.Plan {
	return markdown.DiffRelated(old, new, func(oldSummary, newSummary string) bool {
		rel, _ := facts.Compare(newSummary, oldSummary)
		return rel == facts.Update || rel == facts.Repeat
	})
}

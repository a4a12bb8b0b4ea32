package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/memgate/memgate/memory"
)

// emptySettle is how long an emptied file is given to fill again before
// it is judged empty.
const emptySettle = 200 * time.Millisecond

// judge compares a file with what memgate accepted of it and governs each
// change. Called with g.mu held.
func (g *Guard) judge(ctx context.Context, p string, since time.Time) {
	if err := g.judgeFile(ctx, p, since); err != nil {
		g.met.onError()
		g.log.Error("judging a guarded file; it will be judged again", "file", p, "err", err)
	}
}

func (g *Guard) judgeFile(ctx context.Context, p string, since time.Time) error {
	content, err := os.ReadFile(p)
	exists := err == nil
	if errors.Is(err, fs.ErrNotExist) {
		content = nil
	} else if err != nil {
		return err
	}
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil {
		return err
	}
	if len(content) == 0 && st != nil && st.Content != "" {
		// A tool that truncates and then writes shows an empty file for a
		// moment: judging that would delete every entry. Look again.
		time.Sleep(emptySettle)
		if b, err := os.ReadFile(p); err == nil {
			content, exists = b, true
		}
	}
	if st == nil {
		if !exists {
			return nil
		}
		if !g.baselined[g.dirOf(p)] {
			return g.adopt(ctx, p, content)
		}
		// A file that appeared after memgate began guarding its directory
		// is the agent's new writing: every entry is judged.
		st = &fileState{Path: p}
		if err := g.remember(ctx, p); err != nil {
			return err
		}
	}
	g.addSlots(st)
	if string(content) == st.Content {
		return nil // unchanged, or memgate's own rewrite
	}
	old, now := Parse([]byte(st.Content)), Parse(content)
	oldSlot := map[int]entryState{} // by Start in the old content
	for i, e := range old {
		if i < len(st.Entries) {
			oldSlot[e.Start] = st.Entries[i]
		}
	}
	pending, err := g.pendingOf(ctx, p)
	if err != nil {
		return err
	}
	var undo []Change
	placed := map[string][]entryState{} // entry text -> slots, for the new accepted content
	keep := func(text string, e entryState) { placed[text] = append(placed[text], e) }
	// Entries that did not change keep their slots.
	changes := Diff(old, now)
	changed := map[int]bool{}
	for _, c := range changes {
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
	// decision; only those still pending can be repeated.
	parked := slices.Clone(st.Parked)
	for _, c := range changes {
		var prev entryState
		if c.Old != nil {
			prev = oldSlot[c.Old.Start]
		}
		// The same high-risk change again: undo it, count it, do not
		// announce it twice.
		if i := findParked(parked, pending, c); i >= 0 {
			parked[i].Repeats++
			g.met.onRepeat()
			undo = append(undo, c)
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			continue
		}
		cand := g.candidate(p, c, prev.Slot)
		res, err := g.submit(ctx, cand, c, pending)
		if err != nil {
			return fmt.Errorf("%s %s: %w", kindName(c.Kind), g.rel(p), err)
		}
		switch res.Outcome {
		case memory.OutcomeApplied, memory.OutcomeUnchanged:
			if c.New != nil {
				keep(c.New.Text, entryState{Slot: res.Record.SlotID, Record: res.Record.ID})
				g.slots[res.Record.SlotID] = p
			}
		case memory.OutcomeParked:
			undo = append(undo, c)
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			pe := parkedEntry{Record: res.Record.ID, Kind: c.Kind, Slot: res.Record.SlotID}
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
		case memory.OutcomeRefused:
			undo = append(undo, c)
			if c.Old != nil {
				keep(c.Old.Text, prev)
			}
			g.met.onRevert("refused")
		}
	}
	next := content
	if len(undo) > 0 {
		next = Undo(content, now, undo)
	}
	st.Content, st.Entries, st.Parked = string(next), slotsOf(Parse(next), placed), parked
	// The state first: a crash before the file is rewritten leaves a
	// change the next judging recognises as parked and undoes again.
	if err := saveState(ctx, g.o.KV, st); err != nil {
		return err
	}
	g.addSlots(st)
	if !bytes.Equal(next, content) || !exists && len(next) > 0 {
		if err := g.rewrite(p, content, next, exists); err != nil {
			return err
		}
		g.met.observeRevert(time.Since(since))
	}
	return nil
}

// adopt takes a file seen for the first time as the baseline: its entries
// become active records without review (memory.Governor.Adopt), except
// secrets, which are removed from the file and never stored.
func (g *Guard) adopt(ctx context.Context, p string, content []byte) error {
	now := Parse(content)
	placed := map[string][]entryState{}
	var undo []Change
	for i := range now {
		c := Change{Kind: Added, New: &now[i]}
		cand := g.candidate(p, c, "")
		cand.Actor.RunID = BaselineRun // not undone with the changes of a run
		res, err := g.o.Gov.Adopt(ctx, cand)
		if err != nil {
			return fmt.Errorf("adopting %s line %d: %w", g.rel(p), now[i].Line, err)
		}
		switch res.Outcome {
		case memory.OutcomeRefused:
			undo = append(undo, c)
			g.met.onRevert("refused")
		default:
			// Applied, unchanged, or parked where the slot already held
			// something (then the file shows the entry, as the agent wrote).
			placed[now[i].Text] = append(placed[now[i].Text], entryState{Slot: res.Record.SlotID, Record: res.Record.ID})
		}
	}
	next := content
	if len(undo) > 0 {
		next = Undo(content, now, undo)
	}
	st := &fileState{Path: p, Content: string(next), Entries: slotsOf(Parse(next), placed)}
	if err := saveState(ctx, g.o.KV, st); err != nil {
		return err
	}
	if err := g.remember(ctx, p); err != nil {
		return err
	}
	g.addSlots(st)
	g.log.Info("adopted a memory file as the baseline", "file", g.rel(p), "entries", len(st.Entries), "removed", len(undo))
	if !bytes.Equal(next, content) {
		return g.rewrite(p, content, next, true)
	}
	return nil
}

// candidate is the write a change stands for.
func (g *Guard) candidate(p string, c Change, slot string) memory.Candidate {
	rel := g.rel(p)
	e := c.New
	if e == nil {
		e = c.Old
	}
	cand := memory.Candidate{SubjectID: g.subject(p), CandidateSource: memory.SourceTool,
		Actor:    memory.Actor{Dialect: Dialect, AgentID: "markdown:" + rel, RunID: g.runID, Client: "memgate-guard"},
		Evidence: memory.Evidence{SourceRef: fmt.Sprintf("%s:%d", rel, e.Line), Excerpt: "in " + rel + " under " + headingText(e.Heading)},
		Metadata: map[string]any{"file": rel, "heading": headingText(e.Heading), "headingPath": e.Heading, "markdown": e.Text}}
	switch c.Kind {
	case Added:
		cand.Summary = e.Summary()
	case Changed:
		cand.Summary, cand.SlotID = e.Summary(), slot
	case Removed:
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
func (g *Guard) submit(ctx context.Context, cand memory.Candidate, c Change, pending map[string]*memory.Record) (*memory.SubmitResult, error) {
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
	if cand.SlotID == "" && c.Kind == Removed {
		return &memory.SubmitResult{Outcome: memory.OutcomeApplied, Record: &memory.Record{}}, nil
	}
	res, err := g.o.Gov.Submit(ctx, cand)
	if memory.ErrorCode(err) == memory.ENOTFOUND && cand.SlotID != "" {
		if c.Kind == Removed {
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
	agent := "markdown:" + g.rel(p)
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

// findParked returns the index of the parked change c repeats, or -1.
func findParked(parked []parkedEntry, pending map[string]*memory.Record, c Change) int {
	for i, pe := range parked {
		if pe.Kind != c.Kind || pending[pe.Record] == nil {
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
func before(entries []Entry, e *Entry) string {
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
func slotsOf(entries []Entry, placed map[string][]entryState) []entryState {
	out := make([]entryState, len(entries))
	for i, e := range entries {
		if q := placed[e.Text]; len(q) > 0 {
			out[i], placed[e.Text] = q[0], q[1:]
		}
	}
	return out
}

func kindName(k ChangeKind) string {
	switch k {
	case Added:
		return "an added entry in"
	case Changed:
		return "a changed entry in"
	case Removed:
		return "a removed entry in"
	}
	return "a change in"
}

// rewrite replaces the file's content with next, atomically (a temporary
// file in the same directory, renamed over it) and with the same mode and
// owner, unless the file changed since it was read as base: then the
// agent's newer write stands and is judged next (the state already holds
// what memgate decided).
func (g *Guard) rewrite(p string, base, next []byte, existed bool) error {
	cur, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if existed {
			return nil // removed meanwhile: judged next
		}
	case err != nil:
		return err
	case !bytes.Equal(cur, base):
		return nil
	}
	mode := fs.FileMode(0o644)
	uid, gid := -1, -1
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode().Perm()
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(s.Uid), int(s.Gid)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".memgate-"+filepath.Base(p)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(next); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	if uid >= 0 && os.Geteuid() == 0 {
		_ = os.Chown(tmp.Name(), uid, gid) // keep the agent's ownership when memgate runs as root
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		_ = d.Sync() // the rename itself durable
		d.Close()
	}
	return nil
}

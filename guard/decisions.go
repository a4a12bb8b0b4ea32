package guard

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/guard/markdown"
	"github.com/memgate/memgate/memory"
)

// followDecisions applies to the files what was decided elsewhere: a
// parked change approved is written back, one rejected is forgotten, and
// a rollback, restore, quarantine or another dialect's write to an entry's
// slot puts the slot's active version in the file. Called with g.mu held.
func (g *Guard) followDecisions(ctx context.Context) {
	for p := range g.parked {
		if err := g.followParked(ctx, p); err != nil {
			g.noteError(ctx, p, ReasonDecision, "applying review decisions to a guarded file", err)
		}
	}
	slots := map[string]bool{}
	for {
		page, err := g.o.Gov.EventsPage(ctx, g.cursor, 1000, 0)
		if err != nil {
			g.log.Error("reading the audit log", "err", err)
			return
		}
		for _, ev := range page.Events {
			g.cursor = ev.ID
			switch ev.Type {
			case memory.EventApplied, memory.EventRolledBack, memory.EventRestored, memory.EventSuperseded:
				if _, ok := g.slots[ev.SlotID]; ok && (ev.Actor == nil || ev.Actor.Dialect != Dialect) {
					slots[ev.SlotID] = true
				}
			case memory.EventApproved:
				// Approvals are applied from the parked list; an approval
				// in a slot the file shows differently is a change too.
				if _, ok := g.slots[ev.SlotID]; ok {
					slots[ev.SlotID] = true
				}
			}
		}
		if page.Next == "" || len(page.Events) == 0 {
			break
		}
	}
	for s := range slots {
		if err := g.reconcile(ctx, s); err != nil {
			g.noteError(ctx, g.slots[s], ReasonDecision, "putting a slot's active version in its file", err)
		}
	}
}

// followParked applies the decisions taken on a file's parked changes.
func (g *Guard) followParked(ctx context.Context, p string) error {
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil || st == nil {
		return err
	}
	if len(st.Parked) == 0 {
		delete(g.parked, p)
		return nil
	}
	done := map[string]bool{} // decided records, whose changes leave the parked list
	for _, pe := range slices.Clone(st.Parked) {
		if pe.Unsettled {
			// The file may still show the change: its decision waits until
			// the guard has seen it undone (governFile).
			continue
		}
		rec, err := g.o.Gov.Get(ctx, pe.Record) // a record id: the parked version itself
		if err != nil && memory.ErrorCode(err) != memory.ENOTFOUND {
			return err
		}
		switch {
		case err == nil && rec.Status == memory.StatusPending:
			continue
		case err == nil && (rec.Status == memory.StatusActive || rec.Status == memory.StatusDeleted) && rec.Review != nil:
			// Out of the list in the same save as the write-back (edit),
			// so that a failure later never writes it back twice.
			listed := st.Parked
			st.Parked = slices.DeleteFunc(slices.Clone(st.Parked), func(x parkedEntry) bool { return x.Record == pe.Record })
			if err := g.writeBack(ctx, st, pe, rec); errors.Is(err, errOutrun) {
				// Not written: back in the list, for the next poll.
				st.Parked = listed
				if err := saveState(ctx, g.o.KV, st); err != nil {
					return err
				}
				return err
			} else if err != nil {
				return err
			}
			g.met.onWriteBack()
		}
		done[pe.Record] = true // rejected, or gone: the file already lacks it
	}
	if len(done) == 0 {
		return nil
	}
	st.Parked = slices.DeleteFunc(st.Parked, func(pe parkedEntry) bool { return done[pe.Record] })
	if len(st.Parked) == 0 {
		delete(g.parked, p)
	}
	return saveState(ctx, g.o.KV, st)
}

// writeBack puts an approved change in the file: the entry back where it
// was (under its heading, after the entry it followed; at the end of its
// section if that entry moved), the changed text in place of the old one,
// or the entry removed.
func (g *Guard) writeBack(ctx context.Context, st *fileState, pe parkedEntry, rec *memory.Record) error {
	assign := map[string]entryState{}
	var fn func([]byte) []byte
	switch pe.Kind {
	case markdown.Added:
		assign[pe.Text] = entryState{Slot: rec.SlotID, Record: rec.ID}
		fn = func(c []byte) []byte { return markdown.Insert(c, pe.Heading, pe.After, pe.Text) }
	case markdown.Changed:
		assign[pe.Text] = entryState{Slot: rec.SlotID, Record: rec.ID}
		fn = func(c []byte) []byte {
			if out, ok := markdown.Replace(c, pe.OldText, pe.Text); ok {
				return out
			}
			return markdown.Insert(c, pe.Heading, pe.After, pe.Text)
		}
	case markdown.Removed:
		fn = func(c []byte) []byte {
			out, _ := markdown.Remove(c, pe.OldText)
			return out
		}
	default:
		return nil
	}
	return g.edit(ctx, st, fn, assign)
}

// reconcile makes the file show a slot's active version: its Markdown in
// place of the entry, or no entry when the slot has no active version.
func (g *Guard) reconcile(ctx context.Context, slot string) error {
	p := g.slots[slot]
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil || st == nil {
		return err
	}
	// By slot id only: a free-text slot's id is also its first record's
	// id, and Get would answer that version, superseded after an edit.
	active, err := g.o.Gov.ActiveInSlot(ctx, slot)
	if memory.ErrorCode(err) == memory.ENOTFOUND {
		active, err = nil, nil
	}
	if err != nil {
		return err
	}
	// The active version is a parked change of this file, approved: its
	// write-back is followParked's (under its heading, after the entry it
	// followed), once the guard has seen its undo land. Putting it back
	// here too would show it twice.
	if active != nil && slices.ContainsFunc(st.Parked, func(pe parkedEntry) bool { return pe.Record == active.ID }) {
		return nil
	}
	entries := markdown.Parse([]byte(st.Content))
	for i, e := range entries {
		if i >= len(st.Entries) || st.Entries[i].Slot != slot {
			continue
		}
		if active != nil && st.Entries[i].Record == active.ID {
			return nil
		}
		old := e.Text
		if active == nil {
			return g.edit(ctx, st, func(c []byte) []byte {
				out, _ := markdown.Remove(c, old)
				return out
			}, nil)
		}
		text := markdownOf(active)
		return g.edit(ctx, st, func(c []byte) []byte {
			out, _ := markdown.Replace(c, old, text)
			return out
		}, map[string]entryState{text: {Slot: slot, Record: active.ID}})
	}
	// The slot shows no entry (it was removed): a restored version comes back.
	if active != nil {
		text := markdownOf(active)
		var heading []string
		switch h := active.Metadata["headingPath"].(type) {
		case []string:
			heading = h
		case []any:
			for _, x := range h {
				if s, ok := x.(string); ok {
					heading = append(heading, s)
				}
			}
		}
		return g.edit(ctx, st, func(c []byte) []byte { return markdown.Insert(c, heading, "", text) },
			map[string]entryState{text: {Slot: slot, Record: active.ID}})
	}
	return nil
}

// markdownOf is the file text of a record: only text policy judged, never
// what a writer chose. The Markdown the guard kept in its own record's
// metadata is used only when it renders exactly the summary policy judged
// (one entry and nothing around it, no heading): it keeps the agent's
// markup (a task box, a numbered item, its wrapping) across a rollback.
// Any other record (another dialect's, whose metadata is the writer's) is
// its summary as a list item.
func markdownOf(r *memory.Record) string {
	if m, ok := r.Metadata["markdown"].(string); ok && r.Actor.Dialect == Dialect && rendersExactly(m, r.Summary) {
		return m
	}
	return itemOf(r.Summary)
}

// rendersExactly reports whether Markdown m is one entry whose text is the
// summary.
func rendersExactly(m, summary string) bool {
	es := markdown.Parse([]byte(m))
	return len(es) == 1 && es[0].Text == m && es[0].Summary() == summary
}

// itemOf is a summary as one list item: continuation lines indented under
// it, or, where that would not parse as one entry (a line that starts a
// nested item), its words on one line.
func itemOf(summary string) string {
	lines := strings.Split(summary, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " \t")
	}
	m := "- " + strings.Join(lines, "\n  ")
	if es := markdown.Parse([]byte(m)); len(es) == 1 && es[0].Text == m {
		return m
	}
	return "- " + strings.Join(strings.Fields(summary), " ")
}

// edit changes what memgate accepted of a file and the file itself alike:
// fn is applied to the accepted content, and to the file (if the agent has
// edited it since, to its edits too, which are judged next). assign gives
// the slots of the texts the edit puts in.
func (g *Guard) edit(ctx context.Context, st *fileState, fn func([]byte) []byte, assign map[string]entryState) error {
	before := fileState{Path: st.Path, Content: st.Content, Entries: slices.Clone(st.Entries), Parked: slices.Clone(st.Parked)}
	placed := map[string][]entryState{}
	for text, e := range assign {
		placed[text] = []entryState{e}
	}
	for i, e := range markdown.Parse([]byte(st.Content)) {
		if i < len(st.Entries) {
			placed[e.Text] = append(placed[e.Text], st.Entries[i])
		}
	}
	disk, err := g.read(st.Path)
	if err != nil {
		return err // a refusal: the decision waits until the file can be written
	}
	file := disk.data
	accepted := []byte(st.Content)
	next := fn(accepted)
	nextFile := next
	if !bytes.Equal(file, accepted) {
		nextFile = fn(file)
	}
	st.Content, st.Entries = string(next), slotsOf(markdown.Parse(next), placed)
	if err := saveState(ctx, g.o.KV, st); err != nil {
		disk.close()
		return err
	}
	g.addSlots(st)
	// The agent's file the rewrite finds in its way (its write, or the
	// same bytes when a reader only opened the file) gets the decision
	// too: st already holds it, so judging that file against st would
	// take the decision for the agent's change and undo it. What the agent
	// changed is judged at the guard's next look, as for an edit made
	// before the read. A version made on top of the guard's file has the
	// decision already (fn, an insertion, must not run twice).
	redo := func(content []byte, ours bool) ([]byte, error) {
		if ours {
			return content, nil
		}
		return fn(content), nil
	}
	done, err := g.settle(ctx, st.Path, st, disk, nextFile, time.Now(), redo)
	if err != nil || done {
		return err
	}
	// The agent won every round: the file does not show the decision.
	// What memgate accepted goes back to what the file was made from, so
	// that the agent's writes are judged against that, never the
	// decision taken for their undoing; the decision is put in again at
	// a later turn (followParked on the next poll, the rescan's check).
	*st = before
	if err := saveState(ctx, g.o.KV, st); err != nil {
		return err
	}
	return errOutrun
}

// errOutrun: the agent wrote the file again in every round of a rewrite
// that was to put a decision in it.
var errOutrun = errors.New("guard: the agent rewrote the file in every round of putting a decision in it; trying again later")

// reconcileAll puts every guarded entry's active version in its file: what
// was decided while memgate was down.
func (g *Guard) reconcileAll(ctx context.Context) error {
	for p := range g.parked {
		if err := g.followParked(ctx, p); err != nil {
			return err
		}
	}
	for s := range g.slots {
		if err := g.reconcile(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

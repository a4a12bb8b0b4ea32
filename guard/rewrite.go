package guard

import (
	"bytes"
	"os"
)

// maxRaced bounds the rounds of a rewrite the agent beat each time (it
// wrote before the guard's rename); its last write stands and is judged on
// its next event.
const maxRaced = 20

// owedWrite is an agent write a rewrite of the guard's displaced: the
// agent changed base into agent.
type owedWrite struct{ base, agent []byte }

// rewriter makes a guarded file read what the guard decided without losing
// a write of the agent's (issue 30, point 6). The agent's tools take no
// lock, so a write can land between the guard's read and its rename. One
// that landed before the rename is decided about in place of the read, and
// the guard writes nothing until it has; one the rename displaced
// (replaceBeneath hands it back) is owed: put on top of the file (onTop)
// and decided about, in this round and every later one, until a rewrite
// lands with nothing displaced.
type rewriter struct {
	root int    // the workspace
	rel  string // the file below it
	max  int64  // the file size cap
	// decide returns what the file must read, given the agent's version of
	// it. ours: the guard's file has been on the path in this rewrite, so
	// the version was made on top of it (the guard's file with displaced
	// writes put back, or a write that replaced it) and already reads
	// what the guard decided; else it is the agent's file as it was.
	decide func(content []byte, ours bool) ([]byte, error)
	// repaired is told of each agent write found in a rewrite and kept:
	// displaced (put back on top) or not (the rename undone).
	repaired func(displaced bool)
	// hold takes a replaced file: a write may yet land in it (base: what
	// the guard read of it last).
	hold func(f *os.File, base []byte)
}

// run makes the file read next, disk being the file as read (closed by
// run), owed the agent writes already displaced. done: the file reads what
// was decided; wrote: the guard wrote it.
func (rw *rewriter) run(disk *fileSnap, next []byte, owed []owedWrite) (done, wrote bool, err error) {
	defer func() { disk.close() }()
	for raced := 0; ; {
		if bytes.Equal(next, disk.data) && (disk.exists() || len(next) == 0) {
			return true, wrote, nil
		}
		res, err := replaceBeneath(rw.root, rw.rel, disk, next, rw.max)
		if res != nil && res.held != nil {
			rw.hold(res.held, res.heldBase)
		}
		if err != nil {
			if res != nil {
				res.now.close()
			}
			return false, wrote, err
		}
		base := disk.data
		disk.close()
		disk = res.now
		switch {
		case res.displaced != nil:
			wrote = true
			rw.repaired(true)
			owed = append(owed, owedWrite{base: base, agent: res.displaced})
		case res.raced:
			if res.gaveBack {
				rw.repaired(false)
			}
			if raced++; raced > maxRaced && len(owed) == 0 {
				return false, wrote, nil
			}
		default:
			return true, true, nil
		}
		content := disk.data // the guard's file (displaced), or the agent's (raced)
		for _, o := range owed {
			content = onTop(o.base, o.agent, content)
		}
		if next, err = rw.decide(content, wrote); err != nil {
			return false, wrote, err
		}
	}
}

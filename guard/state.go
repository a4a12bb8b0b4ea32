package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memgate/memgate/guard/markdown"
	"github.com/memgate/memgate/memory/storeapi"
)

const kvNamespace = "guard"

// fileState is what memgate accepted of one guarded file: the content it
// last wrote or let stand, the slot of each entry in it, and the changes it
// undid that wait for review. The file on disk differs from Content only by
// edits the guard has not judged yet.
type fileState struct {
	Path    string        `json:"path"` // absolute
	Content string        `json:"content"`
	Entries []entryState  `json:"entries"` // one per Parse(Content) entry, in order
	Parked  []parkedEntry `json:"parked,omitempty"`
}

// entryState ties an entry of the accepted content to its slot.
type entryState struct {
	Slot   string `json:"slot"`
	Record string `json:"record,omitempty"` // the active version the file shows
}

// parkedEntry is a change undone in the file while a reviewer decides.
type parkedEntry struct {
	Record  string              `json:"record"` // the pending record
	Kind    markdown.ChangeKind `json:"kind"`
	Text    string              `json:"text,omitempty"`    // the entry proposed (added, changed)
	OldText string              `json:"oldText,omitempty"` // the entry it replaces (changed, removed)
	Heading []string            `json:"heading,omitempty"`
	After   string              `json:"after,omitempty"` // the entry before it, for the write-back
	Slot    string              `json:"slot,omitempty"`
	Repeats int                 `json:"repeats,omitempty"` // how often the agent wrote it again
	// Unsettled: the guard parked the change but has not yet seen the file
	// without it (its undo not written yet, memgate stopped before it).
	// Until then the change in the file is the guard's unfinished undo:
	// undone again, never parked again, whatever was decided meanwhile;
	// and its decision waits (followParked).
	Unsettled bool `json:"unsettled,omitempty"`
}

func stateKey(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:16])
}

func loadState(ctx context.Context, kv storeapi.KV, path string) (*fileState, error) {
	b, err := kv.Get(ctx, kvNamespace, stateKey(path))
	if errors.Is(err, storeapi.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var st fileState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("guard: state of %s: %w", path, err)
	}
	return &st, nil
}

func saveState(ctx context.Context, kv storeapi.KV, st *fileState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("guard: state of %s: %w", st.Path, err)
	}
	return kv.Put(ctx, kvNamespace, stateKey(st.Path), b)
}

// indexKey keeps the paths of every file the guard has state for, so that
// a file deleted while memgate was down is judged at start too.
const indexKey = "files"

func loadIndex(ctx context.Context, kv storeapi.KV) ([]string, error) {
	b, err := kv.Get(ctx, kvNamespace, indexKey)
	if errors.Is(err, storeapi.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var paths []string
	if err := json.Unmarshal(b, &paths); err != nil {
		return nil, fmt.Errorf("guard: file index: %w", err)
	}
	return paths, nil
}

func saveIndex(ctx context.Context, kv storeapi.KV, paths []string) error {
	b, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	return kv.Put(ctx, kvNamespace, indexKey, b)
}

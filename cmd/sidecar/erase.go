package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/proxy/mem0"
)

// eraser runs erasures end to end: it journals the request, has the
// governor erase the records, their events and notices
// (memory.Governor.Erase), removes the requests' text from Mem0's event
// log, compacts the store so the bytes leave the disk, and then clears
// the journal. A sidecar killed midway finds the request in the journal at
// its next start and runs it again (every step is idempotent), so an
// erasure is never left half-done.
type eraser struct {
	gov     *memory.Governor
	kv      storeapi.KV
	events  *mem0.EventLog                  // nil: no Mem0 event log
	compact func(ctx context.Context) error // nil: the store has no compaction
	// forget drops the stored vectors of erased records at once (the
	// semantic index, --embed-url); nil without one.
	forget func(ctx context.Context, ids []string) error
	newID  func() string
	log    *slog.Logger
	mu     sync.Mutex // one erasure at a time in this process
}

// The journal: the erasures requested and not finished. On a store
// several instances share (journalKV: PostgreSQL), each request is a key of
// its own (erasureKeyPrefix + its id), so two instances erasing at once
// never overwrite each other's entry; on the embedded store, one process
// alone, the list is one key (erasureJournal) and e.mu orders its updates.
const (
	erasureNamespace = "erasure"
	erasureJournal   = "pending"
	erasureKeyPrefix = "req/"
)

// journalKV is a KV area that lists and deletes keys (pgstore.Store).
type journalKV interface {
	storeapi.KVScanner
	storeapi.KVDeleter
}

// erasureAnswer is what an erasure answers: the governor's counts and
// what else it did, and where the data may still be.
type erasureAnswer struct {
	*memory.ErasureResult
	Mem0Events int  `json:"mem0Events"` // Mem0 events whose request text was removed
	Compacted  bool `json:"compacted"`
	// StillHeldBy names what memgate cannot erase: backups and snapshots
	// taken before, and the store's own residue.
	StillHeldBy []string `json:"stillHeldBy"`
}

// stillHeld is said of every erasure: memgate does not know where its
// backups went.
var stillHeld = []string{
	"every backup taken before this erasure (sidecar snapshot save/export files, volume snapshots, database dumps, PostgreSQL base backups, WAL archives and replicas' logs): erase or expire them yourself",
	"Slack messages already posted keep the text they were posted with until updated; withdrawn reviews are updated, decided ones are not",
	"with --guard-dir: the guarded Markdown files themselves (the agent's), and the guard's record of each file's accepted text, until the file next changes",
}

// journal returns the erasures requested and not finished: the list key's,
// and on a store that lists keys, one per request key.
func (e *eraser) journal(ctx context.Context) ([]memory.ErasureRequest, error) {
	reqs, err := e.readList(ctx)
	if err != nil {
		return nil, err
	}
	if j, ok := e.kv.(journalKV); ok {
		var bad error
		err := j.ScanNamespace(ctx, erasureNamespace, false, func(key string, value []byte) bool {
			if !strings.HasPrefix(key, erasureKeyPrefix) {
				return true
			}
			var r memory.ErasureRequest
			if bad = json.Unmarshal(value, &r); bad != nil {
				return false
			}
			reqs = append(reqs, r)
			return true
		})
		if err = errors.Join(err, bad); err != nil {
			return nil, fmt.Errorf("read the erasure journal: %w", err)
		}
	}
	return reqs, nil
}

// readList returns the requests in the list key (none when it is absent).
func (e *eraser) readList(ctx context.Context) ([]memory.ErasureRequest, error) {
	b, err := e.kv.Get(ctx, erasureNamespace, erasureJournal)
	if errors.Is(err, storeapi.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read the erasure journal: %w", err)
	}
	var list []memory.ErasureRequest
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("read the erasure journal: %w", err)
	}
	return list, nil
}

func hasRequest(list []memory.ErasureRequest, id string) bool {
	return slices.ContainsFunc(list, func(r memory.ErasureRequest) bool { return r.ID == id })
}

// record journals req durably, before anything of it is erased.
func (e *eraser) record(ctx context.Context, req memory.ErasureRequest) error {
	if _, ok := e.kv.(journalKV); ok {
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		if err := e.kv.Put(ctx, erasureNamespace, erasureKeyPrefix+req.ID, b); err != nil {
			return fmt.Errorf("write the erasure journal: %w", err)
		}
		return nil
	}
	list, err := e.readList(ctx)
	if err != nil || hasRequest(list, req.ID) {
		return err
	}
	return e.writeJournal(ctx, append(list, req))
}

// clear removes req from the journal once it is done.
func (e *eraser) clear(ctx context.Context, req memory.ErasureRequest) error {
	if j, ok := e.kv.(journalKV); ok {
		if err := j.DeleteKeys(ctx, erasureNamespace, []string{erasureKeyPrefix + req.ID}); err != nil {
			return fmt.Errorf("write the erasure journal: %w", err)
		}
	}
	// The list key: the embedded store's journal (on a shared store, only
	// what a build before per-request keys journaled there).
	list, err := e.readList(ctx)
	if err != nil || !hasRequest(list, req.ID) {
		return err
	}
	return e.writeJournal(ctx, slices.DeleteFunc(list, func(r memory.ErasureRequest) bool { return r.ID == req.ID }))
}

func (e *eraser) writeJournal(ctx context.Context, reqs []memory.ErasureRequest) error {
	b, err := json.Marshal(reqs)
	if err != nil {
		return err
	}
	if err := e.kv.Put(ctx, erasureNamespace, erasureJournal, b); err != nil {
		return fmt.Errorf("write the erasure journal: %w", err)
	}
	return nil
}

// Erase runs an erasure: journaled (durably) before anything is erased.
func (e *eraser) Erase(ctx context.Context, req memory.ErasureRequest) (*erasureAnswer, error) {
	if req.Scope.Empty() {
		return nil, memory.Errorf(memory.EINVALID, "an erasure needs a user, agent, app or run id")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if req.ID == "" {
		req.ID = e.newID()
	}
	if err := e.record(ctx, req); err != nil {
		return nil, err
	}
	return e.run(ctx, req)
}

// run erases and then clears req from the journal; e.mu is held.
func (e *eraser) run(ctx context.Context, req memory.ErasureRequest) (*erasureAnswer, error) {
	res, err := e.gov.Erase(ctx, req)
	if err != nil {
		return nil, err
	}
	if e.forget != nil {
		if err := e.forget(ctx, res.Records); err != nil {
			return nil, fmt.Errorf("erasure %s: the vectors of the erased records: %w", req.ID, err)
		}
	}
	ans := &erasureAnswer{ErasureResult: res, StillHeldBy: slices.Clone(stillHeld)}
	ids := map[string]bool{}
	for _, id := range res.Records {
		ids[id] = true
	}
	if ans.Mem0Events, err = e.events.Erase(ctx, func(ev *mem0.Event) bool { return mem0EventInScope(ev, req.Scope, ids) }); err != nil {
		return nil, err
	}
	if e.compact != nil {
		if err := e.compact(ctx); err != nil {
			return nil, fmt.Errorf("erasure %s: the records are erased, the compaction failed (it runs again at the next start): %w", req.ID, err)
		}
		ans.Compacted = true
	}
	if err := e.clear(ctx, req); err != nil {
		return nil, err
	}
	return ans, nil
}

// Resume runs the erasures a previous run journaled and did not finish.
func (e *eraser) Resume(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	pending, err := e.journal(ctx)
	if err != nil {
		return err
	}
	for _, req := range pending {
		e.log.Warn("resuming an erasure a previous run did not finish", "id", req.ID, "scope", req.Scope.String())
		if _, err := e.run(ctx, req); err != nil {
			return fmt.Errorf("resume erasure %s: %w", req.ID, err)
		}
	}
	return nil
}

// mem0EventInScope reports whether a Mem0 event is about the erased
// scope: it wrote an erased record, or its request names the scope's ids
// (Mem0's user_id, agent_id, app_id, run_id, top level or in metadata).
func mem0EventInScope(ev *mem0.Event, scope memory.ErasureScope, ids map[string]bool) bool {
	for _, w := range ev.Writes {
		if ids[w.RecordID] {
			return true
		}
	}
	var p struct {
		UserID, AgentID, AppID, RunID string
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(ev.Payload, &raw) != nil {
		return false
	}
	str := func(k string) string {
		var s string
		json.Unmarshal(raw[k], &s)
		return s
	}
	p.UserID, p.AgentID, p.AppID, p.RunID = str("user_id"), str("agent_id"), str("app_id"), str("run_id")
	r := &memory.Record{Scope: memory.Scope{UserID: p.UserID, AgentID: p.AgentID, AppID: p.AppID, RunID: p.RunID}}
	return scope.Matches(r)
}

// eraseCommand is `sidecar erase`: an erasure through the admin API.
func eraseCommand(cl *cliEnv) *ffcli.Command {
	var req memory.ErasureRequest
	return adminCommand(cl, "erase", "erase (--user ID | --agent ID | --app ID | --run ID)... --reason TEXT [--json]",
		"forget a user, agent, app or run: erase the text of every memory in that scope everywhere memgate keeps it",
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Scope.UserID, "user", "", "the user id (Mem0 user_id) whose memories to erase")
			fs.StringVar(&req.Scope.AgentID, "agent", "", "the agent id (Mem0 agent_id)")
			fs.StringVar(&req.Scope.AppID, "app", "", "the app id (Mem0 app_id)")
			fs.StringVar(&req.Scope.RunID, "run", "", "the run or session id (Mem0 run_id)")
			fs.StringVar(&req.Reason, "reason", "", "why (kept in the audit log), e.g. a ticket of the request")
			fs.StringVar(&req.By, "by", "", "who asks (default: admin)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("erase takes no arguments, got %q", args)
			}
			if req.Scope.Empty() {
				return errors.New("give --user, --agent, --app or --run")
			}
			if c.timeout < erasureTimeout {
				c.timeout = erasureTimeout // it compacts the store
			}
			return callShow(ctx, c, cl.stdout, "POST", "/admin/v1/erase", req, func(w io.Writer, a struct {
				memory.ErasureResult
				Mem0Events  int      `json:"mem0Events"`
				Compacted   bool     `json:"compacted"`
				StillHeldBy []string `json:"stillHeldBy"`
			}) error {
				n := a.Counts
				fmt.Fprintf(w, "erasure %s of %s: %d memories erased (%d active, %d pending withdrawn), %d audit events and %d Mem0 events lost their text, %d notices dropped; compacted: %v\n",
					a.ID, a.Scope.String(), n.Records, n.Active, n.Pending, n.Events, a.Mem0Events, n.Notices, a.Compacted)
				for _, s := range a.StillHeldBy {
					fmt.Fprintf(w, "still holding the data: %s\n", s)
				}
				return nil
			})
		})
}

// erasureTimeout bounds the CLI's wait for an erasure at least.
const erasureTimeout = 10 * time.Minute

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/store"
)

// fakeShared is a store beside Badger as serve sees one (sharedStore): the
// Badger store with its commit feed hidden, reads through View whose
// transactions scan the index of active records, and a switch that makes
// it a database that stopped answering.
type fakeShared struct {
	st   *store.Store
	down atomic.Bool
	// kv mirrors what Put wrote, by namespace, for ScanNamespace.
	mu sync.Mutex
	kv map[string]map[string][]byte
}

var _ sharedStore = (*fakeShared)(nil)

func (f *fakeShared) gone() error {
	if f.down.Load() {
		return memory.Errorf(memory.EUNAVAILABLE, "the database does not answer: dial tcp: connection refused")
	}
	return nil
}

func (f *fakeShared) Update(ctx context.Context, fn func(memory.Tx) error) error {
	if err := f.gone(); err != nil {
		return err
	}
	return f.st.Update(ctx, fn)
}

func (f *fakeShared) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	if err := f.gone(); err != nil {
		return err
	}
	return f.st.ViewSnapshot(ctx, func(sn storeapi.Snapshot) error { return fn(sn) })
}

func (f *fakeShared) Get(ctx context.Context, ns, k string) ([]byte, error) {
	if err := f.gone(); err != nil {
		return nil, err
	}
	return f.st.Get(ctx, ns, k)
}

func (f *fakeShared) Put(ctx context.Context, ns, k string, v []byte) error {
	if err := f.gone(); err != nil {
		return err
	}
	if err := f.st.Put(ctx, ns, k, v); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kv[ns] == nil {
		f.kv[ns] = map[string][]byte{}
	}
	f.kv[ns][k] = slices.Clone(v)
	return nil
}

// CountNamespace is pgstore's: how many keys a namespace holds.
func (f *fakeShared) CountNamespace(_ context.Context, ns string) (int, error) {
	if err := f.gone(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.kv[ns]), nil
}

// ScanNamespace is pgstore's: a namespace's keys in byte order (Mem0's
// event log lists through it).
func (f *fakeShared) ScanNamespace(_ context.Context, ns string, newestFirst bool, fn func(string, []byte) bool) error {
	if err := f.gone(); err != nil {
		return err
	}
	f.mu.Lock()
	keys := slices.Sorted(maps.Keys(f.kv[ns]))
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = f.kv[ns][k]
	}
	f.mu.Unlock()
	for i := range keys {
		if newestFirst {
			i = len(keys) - 1 - i
		}
		if !fn(keys[i], vals[i]) {
			return nil
		}
	}
	return nil
}

func (f *fakeShared) Writable() error { return f.gone() }
func (f *fakeShared) Close() error    { return f.st.Close() }

func newFakeShared(t *testing.T) *fakeShared {
	t.Helper()
	st := badgertest.Open(t, store.Options{Dir: t.TempDir(), NoSync: true}) // fakeShared.Close closes it
	return &fakeShared{st: st, kv: map[string]map[string][]byte{}}
}

// TestOpenBackendByStoreURL: --store picks the store by its URL's scheme,
// and its errors name the accepted forms without the URL's password.
func TestOpenBackendByStoreURL(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	shared := func(context.Context, string, *slog.Logger) (sharedStore, error) { return newFakeShared(t), nil }
	tests := []struct {
		store   string
		open    openShared
		badger  bool   // the embedded store opened
		where   string // in Where, for a shared store
		errWant string // in the error; "" for none
	}{
		{store: "", badger: true},
		{store: "postgres://memgate:hunter2@db.example:5432/memgate?sslmode=require&password=hunter2", open: shared,
			where: "PostgreSQL postgres://memgate:xxxxx@db.example:5432/memgate"},
		{store: "POSTGRESQL://db.example/memgate", open: shared, where: "PostgreSQL postgresql://db.example/memgate"},
		{store: "postgres://memgate:hunter2@127.0.0.1:1/memgate", errWant: "unavailable"}, // nothing listens on port 1
		{store: "mysql://db.example/memgate", errWant: "give postgres://… or postgresql://…"},
		{store: "host=db.example password=hunter2", errWant: "is not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.store, func(t *testing.T) {
			cfg := serveConfig{dataDir: t.TempDir(), store: tt.store, openShared: tt.open, storeWait: 300 * time.Millisecond}
			b, err := openBackend(context.Background(), cfg, log)
			if tt.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errWant) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("openBackend(%q) = %v; want an error saying %q, without the password", tt.store, err, tt.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if (b.Follow != nil) != tt.badger || (b.Disk != nil) != tt.badger || (b.Snapshot != nil) != tt.badger {
				t.Fatalf("openBackend(%q): commit feed %v, disk metrics %v, snapshots %v; want them %v", tt.store,
					b.Follow != nil, b.Disk != nil, b.Snapshot != nil, tt.badger)
			}
			if b.Unready == nil || b.Unready(errors.New("down")) == nil {
				t.Fatalf("openBackend(%q): no words for /readyz", tt.store)
			}
			if !tt.badger && (b.Where != tt.where || strings.Contains(b.Where, "hunter2")) {
				t.Fatalf("Where = %q, want %q", b.Where, tt.where)
			}
		})
	}
}

// TestOpenWaitsForTheDatabase: at start, a database that does not answer
// is tried again until it does, within the wait; any other error, and one
// that outlasts the wait, fails start.
func TestOpenWaitsForTheDatabase(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	down := memory.Errorf(memory.EUNAVAILABLE, "the database is unavailable: connection refused")
	tests := []struct {
		name    string
		fails   int   // attempts that fail before one succeeds
		err     error // what they fail with
		wait    time.Duration
		calls   int // attempts made, at most (0: exactly fails+1)
		errWant string
	}{
		{name: "answers at the third attempt", fails: 2, err: down, wait: time.Minute},
		{name: "a wrong password fails at once", fails: 5, err: errors.New("password authentication failed"), wait: time.Minute,
			calls: 1, errWant: "password authentication failed"},
		{name: "down for longer than the wait", fails: 1000, err: down, wait: 1500 * time.Millisecond, calls: 5, errWant: "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			st, err := openWaiting(context.Background(), func(context.Context) (sharedStore, error) {
				if calls++; calls <= tt.fails {
					return nil, tt.err
				}
				return newFakeShared(t), nil
			}, tt.wait, "a test store", log)
			if tt.errWant == "" {
				if err != nil || calls != tt.fails+1 {
					t.Fatalf("after %d attempts: %v; want a store at attempt %d", calls, err, tt.fails+1)
				}
				st.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errWant) || calls > tt.calls {
				t.Fatalf("after %d attempts (at most %d): %v; want an error saying %q", calls, tt.calls, err, tt.errWant)
			}
		})
	}
}

// TestEmbeddingsNeedAStoreThatKeepsVectors: --embed-url with a store that
// has nowhere to keep vectors (a KV area without a namespace scan) fails at
// start, saying why, instead of a search without its vectors. PostgreSQL
// keeps them (TestSemanticSearchAcrossInstancesOnPostgres).
func TestEmbeddingsNeedAStoreThatKeepsVectors(t *testing.T) {
	b := sharedBackend(newFakeShared(t), "a test store")
	defer b.Close()
	_, _, err := openEmbeddings(serveConfig{embedURL: "http://127.0.0.1:1/v1"}, b, nil, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--embed-url") || !strings.Contains(err.Error(), "a test store") {
		t.Fatalf("openEmbeddings on a store without a KV scan: %v; want an error naming --embed-url and the store", err)
	}
}

// serveInProcess runs serve with cfg in this process until the test ends
// (when serve must return nil) and waits for its ready line: it returns the
// agent and admin base URLs and the logs serve writes. A serve that returns
// before it is ready, or is not ready within 30 s, fails the test.
func serveInProcess(t *testing.T, cfg serveConfig) (agent, admin string, logs *testkit.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &testkit.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	ready := regexp.MustCompile(`memgate ready" agent=(\S+) admin=(\S+)`)
	for deadline := time.Now().Add(30 * time.Second); agent == ""; time.Sleep(10 * time.Millisecond) {
		if m := ready.FindStringSubmatch(logs.String()); m != nil {
			agent, admin = "http://"+m[1], "http://"+m[2]
		} else if time.Now().After(deadline) {
			t.Fatalf("not ready; logs:\n%s", logs.String())
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("serve returned %v; logs:\n%s", err, logs.String())
		default:
		}
	}
	return agent, admin, logs
}

// TestServeOnASharedStore runs the sidecar on a store that is not Badger
// (no commit feed, no disk): writes apply, the native list and the Mem0
// search find them through View scans, and when the database stops
// answering /readyz says 503 naming it (without its password) and a write
// answers 503 JSON.
func TestServeOnASharedStore(t *testing.T) {
	for _, k := range []string{"MEMGATE_AGENT_KEYS", "MEMGATE_MEM0_API_KEYS"} {
		t.Setenv(k, "")
	}
	t.Setenv("MEMGATE_ADMIN_TOKEN", "tok")
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.register(fs)
	err := fs.Parse([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--store", "postgres://memgate:hunter2@db.example:5432/memgate"})
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeShared(t)
	var opened string
	cfg.openShared = func(_ context.Context, url string, _ *slog.Logger) (sharedStore, error) {
		opened = url
		return fake, nil
	}
	agent, admin, logs := serveInProcess(t, cfg)
	if opened != cfg.store {
		t.Fatalf("opened %q, want --store's URL", opened)
	}
	call := func(method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	write := `{"layer":"preference","subjectId":"alice","summary":"alice prefers dark mode in every editor","scope":{"userId":"alice"}}`
	if code, body := call("POST", agent+"/api/v1/memories", write); code != http.StatusCreated {
		t.Fatalf("write: %d %s", code, body)
	}
	if code, body := call("GET", agent+"/api/v1/memories?subjectId=alice&q=dark", ""); code != http.StatusOK || !strings.Contains(body, "dark mode") {
		t.Fatalf("native list: %d %s", code, body)
	}
	code, body := call("POST", agent+"/v2/memories/search/", `{"query":"dark mode editor","filters":{"user_id":"alice"}}`)
	if code != http.StatusOK || !strings.Contains(body, "dark mode") {
		t.Fatalf("Mem0 search: %d %s", code, body)
	}
	// Mem0's event log is the store's: an add's event is polled and listed.
	code, body = call("POST", agent+"/v3/memories/add/", `{"messages":[{"role":"user","content":"alice keeps two cats"}],"user_id":"alice","infer":false}`)
	var added struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(body), &added); err != nil || code != http.StatusOK || added.EventID == "" {
		t.Fatalf("Mem0 add: %d %s", code, body)
	}
	if code, body := call("GET", agent+"/v1/event/"+added.EventID+"/", ""); code != http.StatusOK || !strings.Contains(body, added.EventID) {
		t.Fatalf("Mem0 event: %d %s", code, body)
	}
	if code, body := call("GET", agent+"/v1/events/", ""); code != http.StatusOK || !strings.Contains(body, added.EventID) {
		t.Fatalf("Mem0 events: %d %s", code, body)
	}
	if code, body := call("GET", admin+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz with the database up: %d %s", code, body)
	}

	fake.down.Store(true)
	code, body = call("GET", admin+"/readyz", "")
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusServiceUnavailable ||
		!strings.Contains(e.Error.Message, "PostgreSQL postgres://memgate:xxxxx@db.example:5432/memgate") ||
		!strings.Contains(e.Error.Message, "does not answer") || strings.Contains(body, "hunter2") {
		t.Fatalf("/readyz with the database down: %d %s; want 503 naming the database, without its password", code, body)
	}
	code, body = call("POST", agent+"/api/v1/memories", strings.Replace(write, "dark", "light", 1))
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusServiceUnavailable || e.Error.Code != memory.EUNAVAILABLE {
		t.Fatalf("write with the database down: %d %s; want 503 JSON %q", code, body, memory.EUNAVAILABLE)
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("the logs show the database password:\n%s", logs.String())
	}
}

// TestBadgerBackendMovesEarlierEvents: a data directory an earlier
// release wrote Mem0 events into (under mem0/ev/, outside the KV area)
// opens with those events in the backend's event log, moved once.
func TestBadgerBackendMovesEarlierEvents(t *testing.T) {
	ctx := context.Background()
	cfg := serveConfig{dataDir: t.TempDir()}
	st, err := store.Open(store.Options{Dir: filepath.Join(cfg.dataDir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	const id = "01JDZ8Q3K7M2X9R4T6V8W0Y1Z3"
	if err := st.PutKey(ctx, []byte("mem0/ev/"+id), []byte(`{"id":"`+id+`","type":"ADD","writes":[]}`)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for range 2 { // the second start finds nothing left to move
		b, err := openBackend(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		evs, total, err := b.Events.List(ctx, 0, 10)
		if err != nil || total != 1 || len(evs) != 1 || evs[0].ID != id {
			t.Errorf("events after the upgrade: %d of %d, %v", len(evs), total, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

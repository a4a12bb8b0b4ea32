package load

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/oklog/ulid/v2"
)

// BaselineTarget is a running baseline: the URLs of its handlers (the
// load spreads over them as over memgate's instances) and how to stop it.
type BaselineTarget interface {
	Targets() []string
	Close() error
}

// Baseline is the yardstick memgate's writes are measured against: a bare
// HTTP handler that decodes the same request and stores a record of the
// same size in one durable Badger transaction (SyncWrites), answering 201
// with it, as memgate's native write does. No policy, no indexes, no audit.
type Baseline struct {
	URL string
	db  *badger.DB
	srv *baselineServer
}

// StartBaseline opens a Badger database in dir and serves POST
// /api/v1/memories on a loopback port; each stored value is recordBytes
// long (the size of memgate's stored record, see Result.RecordBytes).
func StartBaseline(dir string, recordBytes int) (*Baseline, error) {
	opts := badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil).
		WithMemTableSize(8 << 20).WithNumMemtables(3).WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).WithValueLogFileSize(64 << 20).WithValueThreshold(4 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("baseline: open badger in %s: %w", dir, err)
	}
	b := &Baseline{db: db}
	b.srv, err = startBaselineServer(recordBytes, func(_ context.Context, rec *baselineRecord, value []byte) error {
		return db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("r/"+rec.ID), value) })
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	b.URL = b.srv.url
	return b, nil
}

// Targets is the baseline's one URL.
func (b *Baseline) Targets() []string { return []string{b.URL} }

// Close stops serving and closes the database.
func (b *Baseline) Close() error {
	return errors.Join(b.srv.Close(), b.db.Close())
}

// baselineRequest is the part of a native write the baseline reads.
type baselineRequest struct {
	SubjectID string `json:"subjectId"`
	FactType  string `json:"factType"`
	Summary   string `json:"summary"`
}

type baselineRecord struct {
	ID        string `json:"id"`
	SubjectID string `json:"subjectId"`
	FactType  string `json:"factType"`
	Summary   string `json:"summary"`
	Status    string `json:"status"`
	Pad       string `json:"pad"` // brings the value to the size of memgate's record
}

// baselineServer is the HTTP side every baseline shares: it decodes a
// native write, builds a value the size of memgate's record and hands it
// to store, answering 201 with the value once store returns.
type baselineServer struct {
	url         string
	srv         *http.Server
	recordBytes int
	store       func(ctx context.Context, rec *baselineRecord, value []byte) error
}

func startBaselineServer(recordBytes int, store func(context.Context, *baselineRecord, []byte) error) (*baselineServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	s := &baselineServer{url: "http://" + ln.Addr().String(), recordBytes: max(recordBytes, 64), store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/memories", s.write)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *baselineServer) write(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req baselineRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := baselineRecord{ID: ulid.MustNew(ulid.Now(), rand.Reader).String(), SubjectID: req.SubjectID,
		FactType: req.FactType, Summary: req.Summary, Status: "active"}
	value, _ := json.Marshal(rec)
	if pad := s.recordBytes - len(value); pad > 0 {
		rec.Pad = strings.Repeat("p", pad)
		value, _ = json.Marshal(rec)
	}
	if err := s.store(r.Context(), &rec, value); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	w.Write(append(value, '\n'))
}

// Close stops serving.
func (s *baselineServer) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

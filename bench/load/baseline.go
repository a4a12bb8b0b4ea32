package load

import (
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

// Baseline is the yardstick memgate's writes are measured against: a bare
// HTTP handler that decodes the same request and stores a record of the
// same size in one durable Badger transaction (SyncWrites), answering 201
// with it, as memgate's native write does. No policy, no indexes, no audit.
type Baseline struct {
	URL string
	db  *badger.DB
	srv *http.Server
	ln  net.Listener
	// recordBytes is the size of the stored value.
	recordBytes int
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("baseline: %w", err)
	}
	b := &Baseline{URL: "http://" + ln.Addr().String(), db: db, ln: ln, recordBytes: max(recordBytes, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/memories", b.write)
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	return b, nil
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

func (b *Baseline) write(w http.ResponseWriter, r *http.Request) {
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
	if pad := b.recordBytes - len(value); pad > 0 {
		rec.Pad = strings.Repeat("p", pad)
		value, _ = json.Marshal(rec)
	}
	if err := b.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("r/"+rec.ID), value) }); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	w.Write(append(value, '\n'))
}

// Close stops serving and closes the database.
func (b *Baseline) Close() error {
	err := b.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, b.db.Close())
}

package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// The store-neutral snapshot: a stream any store can write and any store
// can read, to move a deployment between Badger and PostgreSQL. It is JSON
// Lines:
//
//	{"type":"header","format":"memgate-snapshot","version":1,"created":"…"}
//	{"type":"slot","slot":{…}}                 every slot
//	{"type":"record","record":{…}}             every record, any status
//	{"type":"rollbackPoint","rollbackPoint":{…}}
//	{"type":"event","event":{…}}               the audit log, oldest first
//	{"type":"notice","notice":{…}}             the undelivered outbox
//	{"type":"kv","kv":{"namespace":…,"key":…,"value":<base64>}}
//	{"type":"trailer","counts":{…},"sha256":"…"}
//
// Entities are the stores' own JSON shapes, so ids, statuses, versions,
// history and event order survive as they are; indexes are not written:
// the destination rebuilds them as it stores each entity. The trailer
// holds the count of each kind and the SHA-256 of every byte before it, so
// a truncated or altered file is refused. Counts live in the trailer, not
// the header, so Export reads its transaction once.
//
// Not in the stream: embeddings (recomputed from the records by the
// embedder when --embed-url is set) and Badger's Mem0 event log (the
// status of past Mem0 add calls; the records and audit events they
// produced are). A store that keeps that log in its kv area (PostgreSQL)
// exports it as kv entries.

// Format names the stream in its header.
const Format = "memgate-snapshot"

// Version is the stream version this package writes; it reads it and
// every earlier one.
const Version = 1

// Counts says how many entities of each kind a snapshot holds.
type Counts struct {
	Slots          int `json:"slots"`
	Records        int `json:"records"`
	RollbackPoints int `json:"rollbackPoints"`
	Events         int `json:"events"`
	Notices        int `json:"notices"`
	KV             int `json:"kv"`
}

func (c Counts) String() string {
	return fmt.Sprintf("%d records in %d slots, %d rollback points, %d events, %d notices, %d kv entries",
		c.Records, c.Slots, c.RollbackPoints, c.Events, c.Notices, c.KV)
}

func (c Counts) empty() bool { return c == Counts{} }

// Line types.
const (
	typeHeader   = "header"
	typeSlot     = "slot"
	typeRecord   = "record"
	typePoint    = "rollbackPoint"
	typeEvent    = "event"
	typeNotice   = "notice"
	typeKV       = "kv"
	typeTrailer  = "trailer"
	maxLineBytes = 64 << 20 // far above any entity the API admits; bounds a corrupt file's line
)

// line is one line of the stream: its type and the field of that type.
type line struct {
	Type string `json:"type"`

	Format  string    `json:"format,omitempty"`
	Version int       `json:"version,omitempty"`
	Created time.Time `json:"created,omitzero"`

	Slot          *memory.Slot          `json:"slot,omitempty"`
	Record        *memory.Record        `json:"record,omitempty"`
	RollbackPoint *memory.RollbackPoint `json:"rollbackPoint,omitempty"`
	Event         *memory.Event         `json:"event,omitempty"`
	Notice        *memory.Notice        `json:"notice,omitempty"`
	KV            *kvEntry              `json:"kv,omitempty"`

	Counts *Counts `json:"counts,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`
}

type kvEntry struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     []byte `json:"value"`
}

// Export writes everything src holds, read in one transaction, to w as a
// store-neutral snapshot, and returns what it wrote. src's read
// transactions must implement storeapi.ExportTx.
func Export(ctx context.Context, src memory.Store, w io.Writer) (Counts, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	sum := sha256.New()
	enc := json.NewEncoder(io.MultiWriter(bw, sum))
	enc.SetEscapeHTML(false) // keep text as written: the file is read by people too
	var n Counts
	err := src.View(ctx, func(rtx memory.ReadTx) error {
		tx, ok := rtx.(storeapi.ExportTx)
		if !ok {
			return fmt.Errorf("this store cannot be exported: its read transactions (%T) lack the export scans", rtx)
		}
		// Each scan stops at the first failure, kept here.
		var failed error
		put := func(l *line, count *int) bool {
			if failed = ctx.Err(); failed == nil {
				failed = enc.Encode(l)
			}
			*count++
			return failed == nil
		}
		if err := enc.Encode(&line{Type: typeHeader, Format: Format, Version: Version, Created: time.Now().UTC()}); err != nil {
			return err
		}
		scans := []func() error{
			func() error {
				return tx.ScanSlots(func(s *memory.Slot) bool { return put(&line{Type: typeSlot, Slot: s}, &n.Slots) })
			},
			func() error {
				return tx.ScanRecords(func(r *memory.Record) bool { return put(&line{Type: typeRecord, Record: r}, &n.Records) })
			},
			func() error {
				return tx.ScanRollbackPoints(func(p *memory.RollbackPoint) bool {
					return put(&line{Type: typePoint, RollbackPoint: p}, &n.RollbackPoints)
				})
			},
			func() error {
				return tx.ScanEvents("", func(e *memory.Event) bool {
					// The audit chain is the store's own: an import seals
					// the events into the new store's chain, in id order.
					// Verify the source (sidecar audit verify) before.
					e.Seq, e.Prev, e.PrevID, e.Salt, e.TextHash = 0, "", "", "", ""
					return put(&line{Type: typeEvent, Event: e}, &n.Events)
				})
			},
			func() error {
				return tx.ScanNotices(func(o *memory.Notice) bool { return put(&line{Type: typeNotice, Notice: o}, &n.Notices) })
			},
			func() error {
				return tx.ScanKV(func(ns, k string, v []byte) bool {
					return put(&line{Type: typeKV, KV: &kvEntry{Namespace: ns, Key: k, Value: v}}, &n.KV)
				})
			},
		}
		for _, scan := range scans {
			if err := scan(); err != nil {
				return err
			}
			if failed != nil {
				return failed
			}
		}
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("snapshot: export: %w", err)
	}
	// The trailer is not hashed: it holds the hash.
	trailer, err := json.Marshal(&line{Type: typeTrailer, Counts: &n, SHA256: hex.EncodeToString(sum.Sum(nil))})
	if err == nil {
		_, err = bw.Write(append(trailer, '\n'))
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return Counts{}, fmt.Errorf("snapshot: export: %w", err)
	}
	return n, nil
}

// ErrPartialImport marks an Import that failed after writing part of the
// stream: the destination holds some of it and must be discarded.
var ErrPartialImport = errors.New("the store holds part of the snapshot and must be discarded")

// Import writes a store-neutral snapshot into dst and kv, which must hold
// nothing yet, in bounded transactions, and returns what it wrote. It
// keeps every id, status, version and the audit log's order; dst rebuilds
// its indexes as it stores each entity. dst's read transactions must
// implement storeapi.ExportTx: Import checks through them that dst is
// empty and, at the end, that it holds what the trailer counts.
//
// When r is seekable (a file), Import reads the whole stream first and
// refuses a truncated, altered or unknown one before writing anything.
// Otherwise (a pipe) it checks as it writes: a bad stream is then refused
// with an error wrapping ErrPartialImport.
func Import(ctx context.Context, dst memory.Store, kv storeapi.KV, r io.Reader) (Counts, error) {
	have, err := storeCounts(ctx, dst)
	if err != nil {
		return Counts{}, fmt.Errorf("snapshot: import: %w", err)
	}
	if !have.empty() {
		return Counts{}, fmt.Errorf("snapshot: import: the destination store is not empty (it holds %s): import into an empty store", have)
	}
	if s, ok := r.(io.Seeker); ok {
		if start, err := s.Seek(0, io.SeekCurrent); err == nil { // a pipe fails here
			if _, err := readStream(ctx, r, func(*line) error { return nil }); err != nil {
				return Counts{}, fmt.Errorf("snapshot: import: %w (nothing was written)", err)
			}
			if _, err := s.Seek(start, io.SeekStart); err != nil {
				return Counts{}, fmt.Errorf("snapshot: import: rewind: %w", err)
			}
		}
	}
	w := &importer{ctx: ctx, dst: dst, kv: kv}
	want, err := readStream(ctx, r, w.add)
	if err == nil {
		err = w.flush()
	}
	if err == nil {
		err = w.checkCounts(want)
	}
	if err != nil {
		if w.wrote {
			return Counts{}, fmt.Errorf("snapshot: import: %w: %w", err, ErrPartialImport)
		}
		return Counts{}, fmt.Errorf("snapshot: import: %w (nothing was written)", err)
	}
	return want, nil
}

// readStream reads a stream line by line, handing each entity line to fn,
// and returns the trailer's counts once the header, the counts and the
// hash all check out.
func readStream(ctx context.Context, r io.Reader, fn func(*line) error) (Counts, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var (
		sum     hash.Hash = sha256.New()
		seen    Counts
		trailer *line
		no      int
	)
	for sc.Scan() {
		no++
		if err := ctx.Err(); err != nil {
			return Counts{}, err
		}
		if trailer != nil {
			return Counts{}, fmt.Errorf("line %d: data after the trailer", no)
		}
		b := sc.Bytes()
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			if no == 1 {
				return Counts{}, errNotSnapshot
			}
			return Counts{}, fmt.Errorf("line %d: corrupt: %w", no, err)
		}
		if no == 1 {
			if err := checkHeader(&l); err != nil {
				return Counts{}, err
			}
		} else if l.Type == typeTrailer {
			trailer = &l
			continue
		} else if err := countEntity(&l, &seen); err != nil {
			return Counts{}, fmt.Errorf("line %d: %w", no, err)
		} else if err := fn(&l); err != nil {
			return Counts{}, err
		}
		sum.Write(b)
		sum.Write([]byte{'\n'})
	}
	if err := sc.Err(); err != nil {
		return Counts{}, fmt.Errorf("line %d: %w", no+1, err)
	}
	switch {
	case no == 0:
		return Counts{}, errors.New("empty file: not a memgate snapshot")
	case trailer == nil || trailer.Counts == nil:
		return Counts{}, fmt.Errorf("truncated: no trailer after %d lines", no)
	case *trailer.Counts != seen:
		return Counts{}, fmt.Errorf("the trailer counts %s, the file holds %s", trailer.Counts, seen)
	case trailer.SHA256 != hex.EncodeToString(sum.Sum(nil)):
		return Counts{}, errors.New("checksum mismatch: the file was altered or damaged")
	}
	return seen, nil
}

var errNotSnapshot = errors.New("not a memgate snapshot (no header line; a Badger backup is restored with `snapshot load`)")

func checkHeader(l *line) error {
	switch {
	case l.Type != typeHeader || l.Format != Format:
		return errNotSnapshot
	case l.Version < 1 || l.Version > Version:
		return fmt.Errorf("snapshot version %d: this memgate reads versions up to %d", l.Version, Version)
	}
	return nil
}

// countEntity checks that l carries the entity its type names, with an id,
// and counts it.
func countEntity(l *line, n *Counts) error {
	count := n.of(l.Type)
	if count == nil {
		return fmt.Errorf("unknown line type %q", l.Type)
	}
	if l.entityID() == "" {
		return fmt.Errorf("a %s line without its %s", l.Type, l.Type)
	}
	*count++
	return nil
}

// of returns the count of a line type's entities, nil for another type.
func (c *Counts) of(typ string) *int {
	switch typ {
	case typeSlot:
		return &c.Slots
	case typeRecord:
		return &c.Records
	case typePoint:
		return &c.RollbackPoints
	case typeEvent:
		return &c.Events
	case typeNotice:
		return &c.Notices
	case typeKV:
		return &c.KV
	}
	return nil
}

// entityID names the entity l carries, "" if it carries none of its type.
func (l *line) entityID() string {
	switch {
	case l.Type == typeSlot && l.Slot != nil:
		return l.Slot.ID
	case l.Type == typeRecord && l.Record != nil:
		return l.Record.ID
	case l.Type == typePoint && l.RollbackPoint != nil:
		return l.RollbackPoint.ID
	case l.Type == typeEvent && l.Event != nil:
		return l.Event.ID
	case l.Type == typeNotice && l.Notice != nil:
		return l.Notice.ID
	case l.Type == typeKV && l.KV != nil && l.KV.Namespace != "":
		return l.KV.Namespace + "/" + l.KV.Key
	}
	return ""
}

// storeCounts counts what a store holds, through its export scans.
func storeCounts(ctx context.Context, st memory.Store) (Counts, error) {
	var n Counts
	err := st.View(ctx, func(rtx memory.ReadTx) error {
		tx, ok := rtx.(storeapi.ExportTx)
		if !ok {
			return fmt.Errorf("this store cannot be imported into: its read transactions (%T) lack the export scans", rtx)
		}
		count := func(c *int) bool { *c++; return true }
		return errors.Join(
			tx.ScanSlots(func(*memory.Slot) bool { return count(&n.Slots) }),
			tx.ScanRecords(func(*memory.Record) bool { return count(&n.Records) }),
			tx.ScanRollbackPoints(func(*memory.RollbackPoint) bool { return count(&n.RollbackPoints) }),
			tx.ScanEvents("", func(*memory.Event) bool { return count(&n.Events) }),
			tx.ScanNotices(func(*memory.Notice) bool { return count(&n.Notices) }),
			tx.ScanKV(func(string, string, []byte) bool { return count(&n.KV) }),
		)
	})
	return n, err
}

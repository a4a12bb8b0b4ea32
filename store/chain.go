package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

// The audit chain (memory/chain.go) on Badger. A transaction's events are
// sealed when it commits, under the store's chain lock: the lock is held
// from reading the head to the end of Badger's Commit, so the chain's
// order is the order of the commits that carry events, and a commit that
// conflicts (and is retried) leaves the head as it was. Commits without
// events do not take the lock. In group commit mode (the sidecar's
// default) Commit returns before the fsync, so the lock is held for
// Badger's in-memory write only; with SyncWrites it is held across each
// fsync, and commits with events no longer share them.
//
// Keys (tx.go): e/<event> holds the sealed event, ec/<position, 8 bytes
// big-endian> its id, ch/head the newest event (memory.ChainHead), and
// ch/migrated that every event of the store is in the chain.
//
// Stores written before the chain hold events without it. Open seals them
// once, in id order (their time order), in batches, before anything else
// is written: from then on they are checked like any other event; what
// was done to them before that cannot be told. A crash midway resumes
// after the last batch (ch/migrated is written with the last).

var (
	chainHeadKey     = []byte("ch/head")
	chainMigratedKey = []byte("ch/migrated")
)

func chainPosKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("ec/"), seq)
}

// chainEntryBytes estimates what sealing adds to an event's entry: the
// chain's members, the position key and a share of the head.
const chainEntryBytes = 512

// commitChained seals the events t appended onto the chain, writes them and
// the head into t, commits t, and advances the head if the commit
// succeeded.
func (s *Store) commitChained(t *tx) error {
	if len(t.events) == 0 {
		return t.txn.Commit()
	}
	// What sealing does not owe the head is done before the lock that
	// orders commits: the writers waiting on it wait for less.
	prepared := make([]*memory.PreparedEvent, len(t.events))
	for i, e := range t.events {
		p, err := memory.PrepareEvent(e)
		if err != nil {
			return err
		}
		prepared[i] = p
	}
	s.chainMu.Lock()
	defer s.chainMu.Unlock()
	head := s.head
	for i, e := range t.events {
		doc, next := prepared[i].Seal(head)
		if err := t.txn.Set(key("e/", e.ID), doc); err != nil {
			return fmt.Errorf("seal event %s: %w", e.ID, err)
		}
		if err := t.txn.Set(chainPosKey(next.Seq), []byte(e.ID)); err != nil {
			return fmt.Errorf("seal event %s: %w", e.ID, err)
		}
		head = next
	}
	hb, err := json.Marshal(head)
	if err != nil {
		return err
	}
	if err := t.txn.Set(chainHeadKey, hb); err != nil {
		return fmt.Errorf("write the chain's head: %w", err)
	}
	if err := t.txn.Commit(); err != nil {
		return err
	}
	s.head = head
	return nil
}

// openChain reads the chain's head, sealing first the events of a store
// written before the chain (see above). A store opened read-only keeps
// them as they are.
func (s *Store) openChain(readOnly bool) error {
	var migrated bool
	err := s.db.View(func(txn *badger.Txn) error {
		if _, err := txn.Get(chainMigratedKey); err == nil {
			migrated = true
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		h, err := readChainHead(txn)
		s.head = h
		return err
	})
	if err != nil || migrated || readOnly {
		return err
	}
	n := 0
	for {
		done, sealed, err := s.sealLegacy(migrationBatch)
		if err != nil {
			return fmt.Errorf("store: seal the audit log written before the chain: %w", err)
		}
		n += sealed
		if done {
			break
		}
	}
	if n > 0 {
		s.log.Info("store: the audit log written before the chain is sealed into it (once)", "events", n, "head", s.head.Seq)
	}
	return nil
}

const migrationBatch = 512

// sealLegacy seals up to most events after the head in id order, in one
// transaction; done when it sealed the last and marked the store migrated.
func (s *Store) sealLegacy(most int) (done bool, sealed int, err error) {
	s.chainMu.Lock()
	defer s.chainMu.Unlock()
	head := s.head
	err = s.db.Update(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte("e/")
		it := txn.NewIterator(opts)
		start := key("e/", head.EventID)
		var docs []memory.Event
		for it.Seek(start); it.ValidForPrefix(opts.Prefix) && len(docs) < most; it.Next() {
			if head.EventID != "" && string(it.Item().Key()) == string(start) {
				continue
			}
			var e memory.Event
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &e) }); err != nil {
				it.Close()
				return fmt.Errorf("decode %s: %w", it.Item().Key(), err)
			}
			docs = append(docs, e)
		}
		it.Close()
		for i := range docs {
			doc, next, err := memory.SealEvent(&docs[i], head)
			if err != nil {
				return err
			}
			if err := txn.Set(key("e/", docs[i].ID), doc); err != nil {
				return err
			}
			if err := txn.Set(chainPosKey(next.Seq), []byte(docs[i].ID)); err != nil {
				return err
			}
			head = next
		}
		sealed = len(docs)
		if sealed > 0 {
			hb, err := json.Marshal(head)
			if err != nil {
				return err
			}
			if err := txn.Set(chainHeadKey, hb); err != nil {
				return err
			}
		}
		if done = sealed < most; done {
			return txn.Set(chainMigratedKey, []byte{1})
		}
		return nil
	})
	if err != nil {
		return false, 0, err
	}
	s.head = head
	return done, sealed, s.durable()
}

func readChainHead(txn *badger.Txn) (memory.ChainHead, error) {
	var h memory.ChainHead
	item, err := txn.Get(chainHeadKey)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return h, nil
	} else if err != nil {
		return h, fmt.Errorf("read the chain's head: %w", err)
	}
	err = item.Value(func(b []byte) error { return json.Unmarshal(b, &h) })
	return h, err
}

var _ memory.AuditChain = (*Store)(nil)

// ChainHead returns the chain's head as the store records it.
func (s *Store) ChainHead(ctx context.Context) (memory.ChainHead, error) {
	var h memory.ChainHead
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		h, err = readChainHead(txn)
		return err
	})
	return h, err
}

// Seal does nothing: Badger seals events as it commits them.
func (s *Store) Seal(context.Context) error { return nil }

// chainPage is how many events one read transaction of ScanChain reads.
const chainPage = 1024

// ScanChain calls fn with the chain's events from position from on, in
// order, a page per read transaction.
func (s *Store) ScanChain(ctx context.Context, from uint64, fn func(pos uint64, id string, doc []byte) error) error {
	type entry struct {
		pos uint64
		id  string
		doc []byte
	}
	for {
		var page []entry
		err := s.view(ctx, func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = []byte("ec/")
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(chainPosKey(from)); it.ValidForPrefix(opts.Prefix) && len(page) < chainPage; it.Next() {
				k := it.Item().Key()
				if len(k) != len(opts.Prefix)+8 {
					return fmt.Errorf("chain key %q is not a position", k)
				}
				id, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				e := entry{pos: binary.BigEndian.Uint64(k[len(opts.Prefix):]), id: string(id)}
				item, err := txn.Get(key("e/", e.id))
				switch {
				case errors.Is(err, badger.ErrKeyNotFound):
				case err != nil:
					return err
				default:
					if e.doc, err = item.ValueCopy(nil); err != nil {
						return err
					}
				}
				page = append(page, e)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: scan the audit chain: %w", err)
		}
		for _, e := range page {
			if err := fn(e.pos, e.id, e.doc); err != nil {
				return err
			}
		}
		if len(page) < chainPage {
			return nil
		}
		from = page[len(page)-1].pos + 1
	}
}

// view runs fn in a read-only Badger transaction.
func (s *Store) view(ctx context.Context, fn func(*badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

var _ memory.EventTextEraser = (*tx)(nil)

// EraseEventText removes the text of a stored event (memory.EraseEventText):
// its hash, and so the chain, is unchanged.
func (t *tx) EraseEventText(id, why string) (bool, error) {
	k := key("e/", id)
	item, err := t.txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, memory.Errorf(memory.ENOTFOUND, "event %s not found", id)
	} else if err != nil {
		return false, fmt.Errorf("get event %s: %w", id, err)
	}
	doc, err := item.ValueCopy(nil)
	if err != nil {
		return false, fmt.Errorf("get event %s: %w", id, err)
	}
	out, changed, err := memory.EraseEventText(doc, why)
	if err != nil || !changed {
		return false, err
	}
	for _, e := range t.events {
		if e.ID == id { // appended by this transaction, sealed at commit: seal it without its text
			e.Input, e.Reason, e.Erased = nil, "", why
		}
	}
	return true, t.set(k, out)
}

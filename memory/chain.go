package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The audit log is a hash chain, so that an edit, a removal or a
// reordering of an event made behind memgate's back (in the database, on
// the disk) is found by `sidecar audit verify`.
//
// The store seals each event as it appends it, in commit order (store and
// pgstore say how they serialise that): the event gets its position in the
// chain (Seq), the hash and id of the event before it (Prev, PrevID), a
// random salt, and TextHash, the salted SHA-256 of its text parts (Input
// and Reason, the only parts of an event that hold what a writer or an
// operator wrote; the rest are ids, times, types and decisions). An
// event's own hash is the SHA-256 of its stored JSON without the text
// parts: it covers TextHash, so the text is covered too, and erasure and
// retention can remove the text (EraseEventText) and leave the chain
// intact: the salted hash stays, and lets nobody read the text back.
//
// The hashes are taken over the stored bytes, decoded into a map and
// encoded again (keys sorted, values compacted): fields this version does
// not know are covered as they are, and a verifier needs no Event type.
//
// What the chain proves: each event is the one sealed after the event
// before it, unchanged but for text removal. What it cannot prove alone:
// that the newest events were not cut off and the head rewritten to
// match, or the whole log rewritten from some event on by someone who can
// write the store. An export signed with a key kept elsewhere (audit
// export --audit-key) fixes the head at the time of the export.

// MarshalStored encodes v as stores keep it: as json.Marshal does, but
// with <, > and & as they are, not as \u003c and the like (six bytes for
// one), so that text made of them takes the room stored that it took
// sent. Values live in Badger's tree, where every byte of a transaction
// counts against its bound (store.valueThreshold), and the largest write
// must fit. Decoding reads either form, and the chain's hashes do not see
// the difference (they encode again what they decode).
func MarshalStored(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ChainHead is the newest event of an audit chain, or the link before the
// first event of an export: its position, hash and id. The zero value is
// the link before the first event of a store.
type ChainHead struct {
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
	EventID string `json:"eventId"`
}

// eventTextKeys are the members of an event's JSON that hold text: what a
// writer wrote (the recorded policy input: candidate, current record) and
// what an operator wrote (a reason). Erasure removes them.
func isEventText(key string) bool { return key == "input" || key == "reason" }

// erasedKey marks an event whose text was removed, and why; it is not
// hashed (it is added after sealing).
const erasedKey = "erased"

// chainDomain separates event hashes from any other SHA-256 memgate takes.
const chainDomain = "memgate audit event v1\n"

// SealEvent returns the stored form of e appended after head, and the new
// head. e is not changed.
func SealEvent(e *Event, head ChainHead) (doc []byte, next ChainHead, err error) {
	return sealEvent(e, head, newSalt())
}

// PreparedEvent is an event sealed but for its link to the chain (its
// position and the event before it, the head): the part of sealing that
// does not depend on the head. A store prepares before it takes the lock
// that orders its commits, so the part of sealing it does under that
// lock, Seal, is one hash and one copy.
type PreparedEvent struct {
	id     string
	stored map[string]json.RawMessage // members as stored (MarshalStored's bytes)
	header map[string]json.RawMessage // the header's members as hashed (json.Marshal's bytes)
}

// PrepareEvent prepares e for sealing with a new random salt. e is not
// changed.
func PrepareEvent(e *Event) (*PreparedEvent, error) {
	return prepareEvent(e, newSalt())
}

// newSalt is a new random salt for an event's text hash.
func newSalt() string {
	var salt [16]byte
	rand.Read(salt[:]) // never fails (crypto/rand)
	return hex.EncodeToString(salt[:])
}

// sealEvent seals e with the salt given.
func sealEvent(e *Event, head ChainHead, salt string) (doc []byte, next ChainHead, err error) {
	p, err := prepareEvent(e, salt)
	if err != nil {
		return nil, head, err
	}
	doc, next = p.Seal(head)
	return doc, next, nil
}

// prepareEvent prepares e with the salt given. The text parts (Input,
// Reason), the largest, are encoded once apart and hashed and stored from
// those bytes; the rest goes through a map as the chain's definition says.
// Sealed, the hashes and the stored bytes are those of decoding the whole
// event into a map and encoding it again (TestSealEventMatchesTheMapRoundTrip).
func prepareEvent(e *Event, salt string) (*PreparedEvent, error) {
	c := *e
	c.Seq, c.Prev, c.PrevID = 0, "", "" // the link, which Seal adds (all three omitted when empty)
	c.Salt, c.TextHash, c.Erased = salt, "", ""
	fail := func(err error) (*PreparedEvent, error) {
		return nil, fmt.Errorf("seal event %s: %w", e.ID, err)
	}
	// As stored (compact, <, > and & as they are) and as hashed (those
	// escaped, as json.Marshal writes them).
	stored, hashed := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	if len(c.Input) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, c.Input); err != nil {
			return fail(err)
		}
		stored["input"] = b.Bytes()
	}
	if c.Reason != "" {
		var err error
		if stored["reason"], err = MarshalStored(c.Reason); err != nil {
			return fail(err)
		}
	}
	for k, v := range stored {
		hashed[k] = htmlEscaped(v)
	}
	c.Input, c.Reason = nil, ""
	raw, err := MarshalStored(&c)
	if err != nil {
		return fail(err)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fail(err)
	}
	hdr, text, err := eventParts(m) // text: the decision's messages, if any
	if err != nil {
		return fail(err)
	}
	maps.Copy(text, hashed)
	th, _ := json.Marshal(saltedHash(c.Salt, appendObject(nil, text)))
	m["textHash"], hdr["textHash"] = th, th
	for k, v := range hdr {
		hdr[k] = htmlEscaped(v) // as json.Marshal writes a map of them (hashHeader)
	}
	maps.Copy(m, stored)
	return &PreparedEvent{id: c.ID, stored: m, header: hdr}, nil
}

// Seal returns the prepared event's stored form appended after head, and
// the new head.
func (p *PreparedEvent) Seal(head ChainHead) (doc []byte, next ChainHead) {
	hdr, m := maps.Clone(p.header), maps.Clone(p.stored)
	seq := strconv.AppendUint(nil, head.Seq+1, 10)
	hdr["seq"], m["seq"] = seq, seq
	for k, v := range map[string]string{"prev": head.Hash, "prevId": head.EventID} {
		if v != "" { // omitted when empty, as the Event's fields are
			m[k], _ = MarshalStored(v) // a string always encodes
			hdr[k] = htmlEscaped(m[k])
		}
	}
	next = ChainHead{Seq: head.Seq + 1, Hash: saltedHash(chainDomain, appendObject(nil, hdr)), EventID: p.id}
	return appendObject(nil, m), next
}

// htmlEscaped is compact JSON v as json.Marshal writes it: <, >, &, U+2028
// and U+2029 in strings escaped.
func htmlEscaped(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	json.HTMLEscape(&b, v)
	return b.Bytes()
}

// appendObject appends m as a JSON object with its keys sorted, as
// json.Marshal and MarshalStored write a map, its values as they are:
// each must already be compact (and escaped, where the result must be
// json.Marshal's).
func appendObject(dst []byte, m map[string]json.RawMessage) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		key, _ := json.Marshal(k) // a string always encodes
		dst = append(append(append(dst, key...), ':'), m[k]...)
	}
	return append(dst, '}')
}

// eventParts splits an event's JSON into what its hash covers directly
// (the header: all but the text, the erasure mark and the messages of the
// decision's rules, which may quote the text) and its text (input,
// reason, and those messages when any is not empty).
func eventParts(m map[string]json.RawMessage) (hdr, text map[string]json.RawMessage, err error) {
	hdr, text = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range m {
		switch {
		case isEventText(k):
			text[k] = v
		case k == erasedKey:
		case k == "decision":
			d, msgs, err := splitDecision(v)
			if err != nil {
				return nil, nil, fmt.Errorf("decision: %w", err)
			}
			hdr[k] = d
			if slices.ContainsFunc(msgs, func(s string) bool { return s != "" }) {
				text[decisionMessagesKey], _ = json.Marshal(msgs)
			}
		default:
			hdr[k] = v
		}
	}
	return hdr, text, nil
}

// decisionMessagesKey names the decision's rule messages in the text.
const decisionMessagesKey = "decisionMessages"

// splitDecision returns a decision's JSON without its rules' messages,
// and the messages in order.
func splitDecision(raw json.RawMessage) (json.RawMessage, []string, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(raw, &d); err != nil || d == nil {
		return raw, nil, err // null, or not an object: covered as it is
	}
	r, ok := d["reasons"]
	if !ok {
		return raw, nil, nil
	}
	var reasons []map[string]json.RawMessage
	if err := json.Unmarshal(r, &reasons); err != nil {
		return nil, nil, err
	}
	msgs := make([]string, len(reasons))
	for i, x := range reasons {
		if m, ok := x["message"]; ok {
			if err := json.Unmarshal(m, &msgs[i]); err != nil {
				return nil, nil, err
			}
			delete(x, "message")
		}
	}
	var err error
	if d["reasons"], err = json.Marshal(reasons); err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(d)
	return out, msgs, err
}

// hashText is the salted SHA-256 of an event's text part (see
// eventParts; an event without text hashes "{}").
func hashText(text map[string]json.RawMessage, salt string) (string, error) {
	b, err := json.Marshal(text)
	if err != nil {
		return "", err
	}
	return saltedHash(salt, b), nil
}

// saltedHash is the hex SHA-256 of salt followed by obj, a JSON object
// as json.Marshal writes it.
func saltedHash(salt string, obj []byte) string {
	s := sha256.New()
	s.Write([]byte(salt))
	s.Write(obj)
	return hex.EncodeToString(s.Sum(nil))
}

// headerHash is an event's hash: of its header (see eventParts).
func headerHash(m map[string]json.RawMessage) (string, error) {
	hdr, _, err := eventParts(m)
	if err != nil {
		return "", err
	}
	return hashHeader(hdr)
}

// hashHeader is headerHash of an event's header part: hashed as a text
// part is, with the chain's domain for the salt.
func hashHeader(hdr map[string]json.RawMessage) (string, error) {
	return hashText(hdr, chainDomain)
}

// EventHash returns the hash of a sealed event's stored JSON: what the
// event after it records as Prev.
func EventHash(doc []byte) (string, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(doc, &m); err != nil {
		return "", err
	}
	return headerHash(m)
}

// EraseEventText returns a sealed event's stored JSON without its text
// (the recorded policy input and the reason), marked erased with why
// ("erasure", "retention"). Its hash, and so the chain, is unchanged;
// changed reports whether it held text.
func EraseEventText(doc []byte, why string) (out []byte, changed bool, err error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, false, fmt.Errorf("erase event text: %w", err)
	}
	hdr, text, err := eventParts(m)
	if err != nil {
		return nil, false, fmt.Errorf("erase event text: %w", err)
	}
	if len(text) == 0 {
		return doc, false, nil
	}
	maps.DeleteFunc(m, func(k string, _ json.RawMessage) bool { return isEventText(k) })
	if d, ok := hdr["decision"]; ok {
		m["decision"] = d // without the rules' messages
	}
	m[erasedKey], _ = json.Marshal(why)
	out, err = MarshalStored(m)
	return out, err == nil, err
}

// AuditChain is a store whose audit log is a hash chain (Badger's and
// PostgreSQL's are).
type AuditChain interface {
	// ScanChain calls fn with the events of the chain in chain order,
	// from position from on (1 is the first): each one's position as the
	// store keeps it, its id, and its stored JSON (nil when the store
	// names an event there but no longer holds it). fn's error ends the
	// scan and is returned.
	ScanChain(ctx context.Context, from uint64, fn func(pos uint64, id string, doc []byte) error) error
	// ChainHead returns the newest event of the chain as the store
	// records it (the zero head for an empty chain).
	ChainHead(ctx context.Context) (ChainHead, error)
	// Seal puts the events committed but not yet sealed into the chain
	// (a store that seals as it commits has none).
	Seal(ctx context.Context) error
}

// Kinds of chain problems.
const (
	ChainChanged   = "changed"   // an event's content is not what was sealed
	ChainRemoved   = "removed"   // an event is missing
	ChainReordered = "reordered" // an event is not at its position
)

// ChainProblem is the first thing wrong with a chain: what (Kind), which
// event (its id and position, where known), and in words.
type ChainProblem struct {
	Kind    string `json:"kind"`
	EventID string `json:"eventId,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Detail  string `json:"detail"`
}

func (p *ChainProblem) Error() string { return p.Kind + ": " + p.Detail }

// ChainReport is the outcome of a verification.
type ChainReport struct {
	OK bool `json:"ok"`
	// Events is how many events were checked, Erased how many of them had
	// their text removed by erasure or retention.
	Events  uint64        `json:"events"`
	Erased  uint64        `json:"erased"`
	Last    ChainHead     `json:"last"` // the last event checked
	Problem *ChainProblem `json:"problem,omitempty"`
}

// chainLookahead bounds how far a verifier looks for an event that is
// not at its position before it calls it removed.
const chainLookahead = 4096

// ChainVerifier checks events in chain order, one at a time, and stops at
// the first problem.
type ChainVerifier struct {
	next   uint64 // the position expected next
	prev   ChainHead
	report ChainReport
	gap    *chainGap
}

// chainGap is an event found ahead of its position: reordered if the
// event of the position follows, removed if it does not.
type chainGap struct {
	want       uint64 // the position whose event is missing here
	id, prevID string // the event found there and the predecessor it names
	seq        uint64 // the position that event was sealed at
	seen       int
}

// NewChainVerifier returns a verifier of the events after start (the zero
// head: a whole chain).
func NewChainVerifier(start ChainHead) *ChainVerifier {
	return &ChainVerifier{next: start.Seq + 1, prev: start, report: ChainReport{Last: start}}
}

// chainFields are the members of a sealed event a verifier reads.
type chainFields struct {
	ID       string `json:"id"`
	Seq      uint64 `json:"seq"`
	Prev     string `json:"prev"`
	PrevID   string `json:"prevId"`
	Salt     string `json:"salt"`
	TextHash string `json:"textHash"`
	Erased   string `json:"erased"`
}

func (v *ChainVerifier) fail(kind, id string, seq uint64, format string, args ...any) bool {
	v.report.Problem = &ChainProblem{Kind: kind, EventID: id, Seq: seq, Detail: fmt.Sprintf(format, args...)}
	return false
}

// Add checks the next event: at position pos as the store keeps it (0:
// the next one, as in a file), with id, and its stored JSON (nil: the
// store names the event but no longer holds it). It returns false once a
// problem was found.
func (v *ChainVerifier) Add(pos uint64, id string, doc []byte) bool {
	if v.report.Problem != nil {
		return false
	}
	if pos == 0 {
		pos = v.next
	}
	var f chainFields
	m := map[string]json.RawMessage{}
	parseErr := json.Unmarshal(doc, &m)
	if parseErr == nil {
		parseErr = json.Unmarshal(doc, &f)
	}
	if g := v.gap; g != nil {
		if parseErr == nil && f.Seq == g.want {
			return v.fail(ChainReordered, g.id, g.seq,
				"event %s (sealed at position %d) was moved to position %d, before event %s (sealed at %d)", g.id, g.seq, g.want, f.ID, f.Seq)
		}
		if g.seen++; g.seen >= chainLookahead {
			return v.gapRemoved()
		}
		return true
	}
	if doc == nil {
		return v.fail(ChainRemoved, id, pos, "event %s (position %d) was removed: the chain names it, the store holds it no more", id, pos)
	}
	if parseErr != nil {
		return v.fail(ChainChanged, id, pos, "event %s (position %d) is not the JSON that was sealed: %v", id, pos, parseErr)
	}
	if pos > v.next {
		removed := f.PrevID
		if removed == "" {
			removed = "?"
		}
		return v.fail(ChainRemoved, removed, v.next, "event %s (position %d) was removed: event %s at position %d names it as its predecessor, the chain holds nothing between it and event %s (position %d)",
			removed, pos-1, f.ID, pos, v.prev.EventID, v.prev.Seq)
	}
	if id != "" && f.ID != id {
		return v.fail(ChainChanged, id, pos, "event %s (position %d) now holds the content of event %s", id, pos, f.ID)
	}
	hdr, text, err := eventParts(m) // once, for both hashes
	if err != nil {
		return v.fail(ChainChanged, f.ID, pos, "event %s (position %d): %v", f.ID, pos, err)
	}
	th, err := hashText(text, f.Salt)
	if err != nil {
		return v.fail(ChainChanged, f.ID, pos, "event %s (position %d): %v", f.ID, pos, err)
	}
	if th != f.TextHash {
		if _, erased := m[erasedKey]; !erased || hasText(m) {
			return v.fail(ChainChanged, f.ID, pos, "event %s (position %d) was changed: its text is not the text that was sealed", f.ID, pos)
		}
		v.report.Erased++ // the text was removed by erasure or retention; its salted hash remains
	}
	switch {
	case f.Seq > pos:
		v.gap = &chainGap{want: pos, id: f.ID, prevID: f.PrevID, seq: f.Seq}
		return true
	case f.Seq < pos:
		return v.fail(ChainReordered, f.ID, f.Seq, "event %s (sealed at position %d) was moved to position %d", f.ID, f.Seq, pos)
	}
	if f.Prev != v.prev.Hash || f.PrevID != v.prev.EventID {
		if v.prev.EventID == "" && v.prev.Seq == 0 {
			return v.fail(ChainChanged, f.ID, pos, "event %s (position %d) was changed: it names another predecessor than the start of the chain", f.ID, pos)
		}
		return v.fail(ChainChanged, v.prev.EventID, v.prev.Seq, "event %s (position %d) was changed: its hash is no longer the one event %s (position %d) recorded",
			v.prev.EventID, v.prev.Seq, f.ID, pos)
	}
	h, err := hashHeader(hdr)
	if err != nil {
		return v.fail(ChainChanged, f.ID, pos, "event %s (position %d): %v", f.ID, pos, err)
	}
	v.prev = ChainHead{Seq: pos, Hash: h, EventID: f.ID}
	v.report.Last = v.prev
	v.report.Events++
	v.next = pos + 1
	return true
}

func hasText(m map[string]json.RawMessage) bool {
	_, text, err := eventParts(m)
	return err != nil || len(text) > 0
}

// gapRemoved reports an event found ahead of its position, whose own
// event never came, as the removal of the events before it.
func (v *ChainVerifier) gapRemoved() bool {
	g := v.gap
	removed := g.prevID
	if removed == "" {
		removed = "?"
	}
	return v.fail(ChainRemoved, removed, g.seq-1, "event %s (position %d) was removed: event %s, sealed at position %d, names it as its predecessor and follows event %s (position %d)",
		removed, g.seq-1, g.id, g.seq, v.prev.EventID, v.prev.Seq)
}

// End finishes the check against the head the store (or an export's end)
// records, if any, and returns the report.
func (v *ChainVerifier) End(head *ChainHead) ChainReport {
	if v.report.Problem == nil && v.gap != nil {
		v.gapRemoved()
	}
	if v.report.Problem == nil && head != nil {
		switch {
		case head.Seq > v.prev.Seq:
			v.fail(ChainRemoved, head.EventID, head.Seq, "the newest events were removed: the chain ends at event %s (position %d), its head names event %s at position %d",
				v.prev.EventID, v.prev.Seq, head.EventID, head.Seq)
		case head.Seq < v.prev.Seq:
			v.fail(ChainChanged, head.EventID, head.Seq, "the chain's head was changed: it names event %s at position %d, the chain ends at event %s (position %d)",
				head.EventID, head.Seq, v.prev.EventID, v.prev.Seq)
		case head.Hash != v.prev.Hash || head.EventID != v.prev.EventID:
			v.fail(ChainChanged, v.prev.EventID, v.prev.Seq, "event %s (position %d) was changed: its hash is no longer the one the chain's head recorded",
				v.prev.EventID, v.prev.Seq)
		}
	}
	v.report.OK = v.report.Problem == nil
	return v.report
}

// VerifyChain walks a store's whole audit chain. The store may be written
// meanwhile (a running sidecar: writes, the retention pass): the head is
// read after the chain, and when it names a position past the last one
// read, the events appended since are read too, until the head names no
// more than the chain held, or a read finds nothing new (then the newest
// events were removed). A head read before the chain would be older than
// its end and look changed.
func VerifyChain(ctx context.Context, c AuditChain) (ChainReport, error) {
	if err := c.Seal(ctx); err != nil {
		return ChainReport{}, fmt.Errorf("seal the events not yet in the chain: %w", err)
	}
	v := NewChainVerifier(ChainHead{})
	errStop := errors.New("stop")
	var last uint64 // the last position read
	for round := 1; ; round++ {
		before := last
		err := c.ScanChain(ctx, last+1, func(pos uint64, id string, doc []byte) error {
			if pos != 0 {
				last = pos
			} else {
				last++
			}
			if !v.Add(pos, id, doc) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return ChainReport{}, fmt.Errorf("read the chain: %w", err)
		}
		head, herr := c.ChainHead(ctx)
		if herr != nil {
			return ChainReport{}, fmt.Errorf("read the chain's head: %w", herr)
		}
		// A head past the chain's end is a removal of its newest events
		// when a new read finds no more: the store writes an event's
		// position and the head that names it in one transaction.
		if err == errStop || head.Seq <= last || round > 1 && last == before {
			return v.End(&head), nil
		}
		if round == maxVerifyRounds {
			return ChainReport{}, fmt.Errorf("read the chain: it grew faster than it was read (%d rounds; the head is at position %d, the chain was read to %d)",
				round, head.Seq, last)
		}
	}
}

// maxVerifyRounds bounds VerifyChain's reads of events appended while it
// read the chain.
const maxVerifyRounds = 64

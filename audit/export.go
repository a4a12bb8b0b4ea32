package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/memgate/memgate/memory"
)

// Header is an export's first line.
type Header struct {
	Version    int              `json:"memgateAuditExport"`
	From       time.Time        `json:"from,omitzero"`
	To         time.Time        `json:"to,omitzero"`
	Start      memory.ChainHead `json:"start"`
	ExportedAt time.Time        `json:"exportedAt"`
}

// End is the line after the events.
type End struct {
	Count uint64           `json:"count"`
	Last  memory.ChainHead `json:"last"`
}

// Signature is the last line of a signed export.
type Signature struct {
	Alg   string `json:"alg"`
	KeyID string `json:"keyId"`
	Value string `json:"value"` // base64 (standard, padded)
}

type endLine struct {
	End *End `json:"end"`
}

type signatureLine struct {
	Signature *Signature `json:"signature"`
}

// Export writes the events of the chain from the first one at or after
// from to the last one before to (zero: no bound) as an unsigned export:
// a contiguous stretch of the chain, so a checker can replay it. It
// returns how many events it wrote.
func Export(ctx context.Context, c memory.AuditChain, from, to, now time.Time, w io.Writer) (uint64, error) {
	if err := c.Seal(ctx); err != nil {
		return 0, fmt.Errorf("seal the events not yet in the chain: %w", err)
	}
	bw := bufio.NewWriter(w)
	var prev, last memory.ChainHead
	var n uint64
	started := false
	begin := func() error {
		started, last = true, prev
		return writeLine(bw, Header{Version: 1, From: from, To: to, Start: prev, ExportedAt: now.UTC()})
	}
	errDone := errors.New("done")
	err := c.ScanChain(ctx, 1, func(pos uint64, id string, doc []byte) error {
		if doc == nil {
			return fmt.Errorf("event %s (position %d) is missing: run sidecar audit verify", id, pos)
		}
		var f struct {
			At time.Time `json:"at"`
		}
		if err := json.Unmarshal(doc, &f); err != nil {
			return fmt.Errorf("event %s (position %d): %w", id, pos, err)
		}
		h, err := memory.EventHash(doc)
		if err != nil {
			return fmt.Errorf("event %s (position %d): %w", id, pos, err)
		}
		cur := memory.ChainHead{Seq: pos, Hash: h, EventID: id}
		if !started {
			if f.At.Before(from) {
				prev = cur
				return nil
			}
			if err := begin(); err != nil {
				return err
			}
		}
		if !to.IsZero() && !f.At.Before(to) {
			return errDone
		}
		if _, err := bw.Write(append(bytes.TrimSpace(doc), '\n')); err != nil {
			return err
		}
		last = cur
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return n, err
	}
	if !started {
		if err := begin(); err != nil {
			return n, err
		}
	}
	if err := writeLine(bw, endLine{End: &End{Count: n, Last: last}}); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Signer copies an export through and signs what passed: write the
// export to it, then call Close to append the signature line.
type Signer struct {
	w   io.Writer
	sum hash.Hash
	key *Key
}

// NewSigner signs what is written through it to w with key.
func NewSigner(w io.Writer, key *Key) *Signer {
	return &Signer{w: w, sum: sha256.New(), key: key}
}

func (s *Signer) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.sum.Write(p[:n])
	return n, err
}

// Close appends the signature of everything written.
func (s *Signer) Close() error {
	sig, err := s.key.Sign(s.sum.Sum(nil))
	if err != nil {
		return err
	}
	return writeLine(s.w, signatureLine{Signature: &Signature{Alg: s.key.Alg(), KeyID: s.key.ID(),
		Value: base64.StdEncoding.EncodeToString(sig)}})
}

// FileReport is what VerifyFile found.
type FileReport struct {
	memory.ChainReport
	Header Header `json:"header"`
	// Signed: the file carries a signature; SignatureOK: it was checked
	// with the key given and matches.
	Signed      bool   `json:"signed"`
	SignatureOK bool   `json:"signatureOk"`
	Alg         string `json:"alg,omitempty"`
	KeyID       string `json:"keyId,omitempty"`
	// Error says what is wrong beyond the chain (the file's form, the
	// signature); empty when nothing is.
	Error string `json:"error,omitempty"`
}

// Valid reports whether the file is a complete, unchanged export, signed
// and checked when a key was given.
func (r *FileReport) Valid(keyGiven bool) bool {
	return r.OK && r.Error == "" && (!keyGiven || r.SignatureOK)
}

// maxLine bounds one line of an export (an event with its input).
const maxLine = 64 << 20

// VerifyFile checks an export offline: its form, the chain from its start
// through its events to its end, and, when key is not nil, its signature
// (a file without one fails then).
func VerifyFile(r io.Reader, key *Key) (*FileReport, error) {
	rep := &FileReport{}
	sum := sha256.New()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var v *memory.ChainVerifier
	var end *End
	var sigErr error // the chain is checked too, to name what changed
	line := 0
	bad := func(format string, args ...any) (*FileReport, error) {
		rep.OK = false
		rep.Error = fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)
		return rep, nil
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		switch {
		case line == 1:
			if err := json.Unmarshal(b, &rep.Header); err != nil || rep.Header.Version != 1 {
				return bad("not a memgate audit export header (%v)", err)
			}
			v = memory.NewChainVerifier(rep.Header.Start)
		case rep.Signed:
			return bad("a line after the signature")
		case end != nil:
			var s signatureLine
			if err := json.Unmarshal(b, &s); err != nil || s.Signature == nil {
				return bad("after the end only a signature may follow")
			}
			rep.Signed, rep.Alg, rep.KeyID = true, s.Signature.Alg, s.Signature.KeyID
			if key != nil {
				sig, err := base64.StdEncoding.DecodeString(s.Signature.Value)
				if err != nil {
					return bad("the signature is not base64: %v", err)
				}
				if sigErr = key.Verify(s.Signature.Alg, sum.Sum(nil), sig); sigErr == nil {
					rep.SignatureOK = true
				}
			}
			continue
		default:
			var e endLine
			if json.Unmarshal(b, &e) == nil && e.End != nil {
				end = e.End
				break
			}
			v.Add(0, "", bytes.Clone(b))
		}
		sum.Write(b)
		sum.Write([]byte{'\n'})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the export: %w", err)
	}
	if v == nil {
		return bad("empty")
	}
	if end == nil {
		rep.ChainReport = v.End(nil)
		return bad("no end line: the file was cut short")
	}
	rep.ChainReport = v.End(&end.Last)
	if rep.OK && rep.Events != end.Count {
		return bad("the end line counts %d events, the file holds %d", end.Count, rep.Events)
	}
	if key != nil && !rep.Signed {
		return bad("the file is not signed")
	}
	if sigErr != nil {
		rep.Error = sigErr.Error()
	}
	return rep, nil
}

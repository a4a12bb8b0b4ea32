package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/audit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// chainStore is a Badger store on disk with n events, an hour apart.
func chainStore(t *testing.T, n int) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i := range n {
		err := st.Update(context.Background(), func(tx memory.Tx) error {
			in := json.RawMessage(fmt.Sprintf(`{"candidate":{"summary":"note %d"}}`, i))
			return tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("ev%02d", i), Type: memory.EventApplied,
				At: t0.Add(time.Duration(i) * time.Hour), Input: in})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func export(t *testing.T, st *store.Store, from, to time.Time, key *audit.Key) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
	} = &buf
	var s *audit.Signer
	if key != nil {
		s = audit.NewSigner(&buf, key)
		w = s
	}
	if _, err := audit.Export(context.Background(), st, from, to, t0, w); err != nil {
		t.Fatal(err)
	}
	if s != nil {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func ed25519Files(t *testing.T) (privPath, pubPath string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p8, _ := x509.MarshalPKCS8PrivateKey(priv)
	px, _ := x509.MarshalPKIXPublicKey(pub)
	privPath, pubPath = filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit.pub")
	os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), 0o600)
	os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: px}), 0o644)
	return privPath, pubPath
}

func TestSignedExportVerifiesOfflineAndNamesTampering(t *testing.T) {
	st := chainStore(t, 10)
	hmacPath := filepath.Join(t.TempDir(), "hmac.key")
	os.WriteFile(hmacPath, []byte(strings.Repeat("k", 40)+"\n"), 0o600)
	otherPath := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(otherPath, []byte(strings.Repeat("x", 40)), 0o600)
	privPath, pubPath := ed25519Files(t)
	load := func(p string) *audit.Key {
		k, err := audit.LoadKey(p)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	lines := func(b []byte) []string { return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n") }
	cases := []struct {
		name      string
		sign      *audit.Key
		check     *audit.Key
		from, to  time.Time
		tamper    func([]string) []string
		valid     bool
		events    uint64
		problemID string
	}{
		{name: "hmac, whole chain", sign: load(hmacPath), check: load(hmacPath), valid: true, events: 10},
		{name: "ed25519, checked with the public key", sign: load(privPath), check: load(pubPath), valid: true, events: 10},
		{name: "a range from the middle", sign: load(hmacPath), check: load(hmacPath), from: t0.Add(3 * time.Hour), to: t0.Add(7 * time.Hour), valid: true, events: 4},
		{name: "unsigned, no key", valid: true, events: 10},
		{name: "unsigned, key given", check: load(hmacPath), valid: false, events: 10},
		{name: "another key", sign: load(hmacPath), check: load(otherPath), valid: false, events: 10},
		{name: "an event's text edited", sign: load(privPath), check: load(pubPath), tamper: func(l []string) []string {
			l[5] = strings.Replace(l[5], "note 4", "note 9", 1)
			return l
		}, valid: false, problemID: "ev04"},
		{name: "an event's text edited, no key", tamper: func(l []string) []string {
			l[5] = strings.Replace(l[5], "note 4", "note 9", 1)
			return l
		}, valid: false, problemID: "ev04"},
		{name: "an event removed, no key", tamper: func(l []string) []string {
			return append(l[:3:3], l[4:]...)
		}, valid: false, problemID: "ev02"},
		{name: "cut short", tamper: func(l []string) []string { return l[:6] }, valid: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := export(t, st, tc.from, tc.to, tc.sign)
			if tc.tamper != nil {
				b = []byte(strings.Join(tc.tamper(lines(b)), ""))
			}
			rep, err := audit.VerifyFile(bytes.NewReader(b), tc.check)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Valid(tc.check != nil); got != tc.valid {
				t.Fatalf("valid = %v, want %v: %+v %+v", got, tc.valid, rep, rep.Problem)
			}
			if tc.valid && rep.Events != tc.events {
				t.Fatalf("checked %d events, want %d", rep.Events, tc.events)
			}
			if tc.problemID != "" && (rep.Problem == nil || rep.Problem.EventID != tc.problemID) {
				t.Fatalf("want a problem with %s, got %+v (%s)", tc.problemID, rep.Problem, rep.Error)
			}
		})
	}
}

func TestLoadKeyRefusesShortHMACKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	os.WriteFile(p, []byte("short\n"), 0o600)
	if _, err := audit.LoadKey(p); err == nil {
		t.Fatal("a 5-byte HMAC key was accepted")
	}
	_, pub := ed25519Files(t)
	k, err := audit.LoadKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Sign([]byte("x")); err == nil {
		t.Fatal("a public key signed")
	}
}

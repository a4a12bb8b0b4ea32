package policy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// bundleServer serves one bundle tarball at /bundles/memgate.tar.gz, with an
// ETag, answering 304 when the client already has it, like a real one.
type bundleServer struct {
	*httptest.Server
	mu       sync.Mutex
	tarball  []byte
	requests int
}

func newBundleServer(t *testing.T) *bundleServer {
	s := &bundleServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		if r.URL.Path != "/bundles/memgate.tar.gz" || s.tarball == nil {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(s.tarball)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		if strings.Contains(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(s.tarball)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bundleServer) serve(tarball []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tarball = tarball
}

func (s *bundleServer) url() string { return s.URL + "/bundles/memgate.tar.gz" }

// signer signs bundles with an RSA key.
type signer struct {
	private, public string // PEM
}

func newSigner(t *testing.T) signer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return signer{
		private: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
		public:  string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
	}
}

// buildBundle writes files as a bundle tarball with OPA's bundle writer,
// signed when s is not nil.
func buildBundle(t *testing.T, files FileSet, revision string, s *signer) []byte {
	t.Helper()
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: revision}, Data: map[string]any{}}
	for p, content := range files {
		if p == "data.json" {
			if err := json.Unmarshal([]byte(content), &b.Data); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: "/" + p, Path: "/" + p, Raw: []byte(content)})
	}
	if s != nil {
		if err := b.GenerateSignature(bundle.NewSigningConfig(s.private, "RS256", ""), "fleet", true); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).UseModulePath(true).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBundlePollsChanges(t *testing.T) {
	ctx := context.Background()
	srv := newBundleServer(t)
	review := withoutTests(withRule(t, "checkpoint", "action", "review"))
	srv.serve(buildBundle(t, review, "v1", nil))
	rec := &recorder{}
	c := New(rec.options(Options{Bundle: BundleOptions{URL: srv.url(), PollInterval: 20 * time.Millisecond}}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if c.Revision() == DefaultFiles().Revision() || actionOf(t, c) != memory.ActionReview {
		t.Fatalf("the first bundle is not in force after Open (revision %s)", c.Revision())
	}
	first := c.Revision()

	// A changed bundle is picked up by polling.
	srv.serve(buildBundle(t, withoutTests(DefaultFiles()), "v2", nil))
	waitFor(t, "the changed bundle", func() bool { return c.Revision() != first })
	if actionOf(t, c) != memory.ActionApply {
		t.Error("the changed bundle does not decide")
	}
	second := c.Revision()

	// A bundle that does not compile is refused; the previous one stays.
	broken := withoutTests(DefaultFiles())
	broken["rules.rego"] += "\nfired contains no_such_rule\n"
	srv.serve(buildBundle(t, broken, "v3", nil))
	waitFor(t, "the refusal", func() bool { return rec.lastReload().err != nil })
	if c.Revision() != second {
		t.Errorf("revision %s after a broken bundle, want %s kept", c.Revision(), second)
	}
	if s := c.Stats(); s.Reloads != 3 || s.ReloadFailures < 1 { // the default at Open, then two bundles
		t.Errorf("stats %+v", s)
	}
}

func TestBundleSignatures(t *testing.T) {
	ctx := context.Background()
	fleet, stranger := newSigner(t), newSigner(t)
	srv := newBundleServer(t)
	review := withoutTests(withRule(t, "checkpoint", "action", "review"))
	srv.serve(buildBundle(t, review, "v1", &fleet))
	rec := &recorder{}
	c := New(rec.options(Options{Bundle: BundleOptions{URL: srv.url(), PollInterval: time.Hour,
		PublicKey: fleet.public, KeyID: "fleet"}}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if actionOf(t, c) != memory.ActionReview {
		t.Fatalf("the signed bundle is not in force: %+v", rec.lastReload())
	}
	signed := c.Revision()

	for name, tarball := range map[string][]byte{
		"signed by another key": buildBundle(t, withoutTests(DefaultFiles()), "v2", &stranger),
		"unsigned":              buildBundle(t, withoutTests(DefaultFiles()), "v3", nil),
	} {
		srv.serve(tarball)
		if err := c.Reload(ctx); err == nil {
			t.Errorf("%s: bundle accepted", name)
		}
		if c.Revision() != signed || actionOf(t, c) != memory.ActionReview {
			t.Errorf("%s: revision %s, want %s kept", name, c.Revision(), signed)
		}
		if r := rec.lastReload(); r.err == nil {
			t.Errorf("%s: OnReload got %+v, want the refusal", name, r)
		}
	}
}

func TestBundleServerDownAtOpen(t *testing.T) {
	srv := newBundleServer(t) // serves nothing: 404
	rec := &recorder{}
	c := New(rec.options(Options{Bundle: BundleOptions{URL: srv.url(), PollInterval: time.Hour}}))
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if c.Revision() != DefaultFiles().Revision() {
		t.Errorf("revision %s, want the default serving until a bundle arrives", c.Revision())
	}
	if r := rec.lastReload(); r.err == nil || !strings.Contains(r.err.Error(), "Not Found") {
		t.Errorf("OnReload got %+v, want the download failure", r)
	}
	srv.serve(buildBundle(t, withoutTests(withRule(t, "checkpoint", "action", "review")), "v1", nil))
	if err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if actionOf(t, c) != memory.ActionReview {
		t.Error("the bundle that arrived later is not in force")
	}
}

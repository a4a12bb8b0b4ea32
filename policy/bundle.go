package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/keys"
	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/plugins"
	"github.com/open-policy-agent/opa/v1/plugins/rest"
)

// BundleOptions point a Classifier at an OPA bundle server, so a fleet of
// sidecars follows one policy (--policy-bundle).
type BundleOptions struct {
	// URL of the bundle tarball, e.g. https://bundles.example/memgate.tar.gz.
	URL string
	// PollInterval between checks (default 60s); the server's ETag makes an
	// unchanged bundle a 304.
	PollInterval time.Duration
	// PublicKey, when set, requires bundles to be signed (.signatures.json)
	// and verifies them with it: a PEM public key, or the shared secret for
	// HS256/384/512. A bundle that fails verification is refused.
	PublicKey string
	// KeyAlgorithm is the signing algorithm (default RS256).
	KeyAlgorithm string
	// KeyID names the key (default "default"); a signature naming another
	// key id is refused.
	KeyID string
	// Headers are sent with every request, e.g. Authorization.
	Headers map[string]string
}

// DefaultBundlePollInterval is how often a bundle server is asked.
const DefaultBundlePollInterval = 60 * time.Second

func (o *BundleOptions) setDefaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultBundlePollInterval
	}
	if o.KeyAlgorithm == "" {
		o.KeyAlgorithm = "RS256"
	}
	if o.KeyID == "" {
		o.KeyID = "default"
	}
}

// bundleSource downloads bundles with OPA's downloader in manual mode and
// triggers it from its own loop, which keeps the poll interval and
// cancellation ours.
type bundleSource struct {
	url      string
	interval time.Duration
	dl       *download.Downloader
}

// newBundleSource builds the downloader; onUpdate receives each download
// (a new bundle, "not modified", or an error).
func newBundleSource(o BundleOptions, onUpdate func(context.Context, download.Update) error) (*bundleSource, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", o.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", o.URL)
	}
	server := u.Scheme + "://" + u.Host
	restConfig, err := json.Marshal(map[string]any{"url": server, "headers": o.Headers})
	if err != nil {
		return nil, err
	}
	// OPA's own log lines would repeat what onUpdate reports through slog.
	client, err := rest.New(restConfig, nil, rest.Logger(logging.NewNoOpLogger()))
	if err != nil {
		return nil, fmt.Errorf("bundle client: %w", err)
	}
	trigger := plugins.TriggerManual
	config := download.Config{Trigger: &trigger}
	if err := config.ValidateAndInjectDefaults(); err != nil {
		return nil, err
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	dl := download.New(config, client, path).
		WithCallback(onUpdate).
		WithSizeLimitBytes(MaxPolicyTotalBytes).
		WithBundleParserOpts(ast.ParserOptions{RegoVersion: ast.RegoV1})
	if o.PublicKey != "" {
		key := &keys.Config{Key: o.PublicKey, Algorithm: o.KeyAlgorithm}
		dl = dl.WithBundleVerificationConfig(bundle.NewVerificationConfig(map[string]*keys.Config{o.KeyID: key}, o.KeyID, "", nil))
	}
	return &bundleSource{url: o.URL, interval: o.PollInterval, dl: dl}, nil
}

// trigger downloads once; the update has been handled when it returns.
func (b *bundleSource) trigger(ctx context.Context) error {
	return b.dl.Trigger(ctx)
}

func (b *bundleSource) poll(ctx context.Context) {
	every(ctx, b.interval, func() {
		_ = b.trigger(ctx) // onUpdate has logged and counted any failure
	})
}

// installBundle is the downloader's callback.
func (c *Classifier) installBundle(ctx context.Context, u download.Update) error {
	source := "bundle " + c.opts.Bundle.URL
	switch {
	case u.Error != nil:
		c.sourceFailed(source, fmt.Errorf("download: %w", u.Error))
		return nil // the downloader returns u.Error itself
	case u.Bundle == nil:
		return nil // not modified
	}
	files, err := bundleFiles(u.Bundle)
	if err != nil {
		c.sourceFailed(source, err)
		return err
	}
	if u.ETag != "" {
		source += " (etag " + u.ETag + ")"
	}
	return c.install(ctx, files, source, true)
}

// bundleFiles turns a bundle into a FileSet: its modules by path and its
// merged data as one data.json, so a bundle and a directory load the same way.
func bundleFiles(b *bundle.Bundle) (FileSet, error) {
	files := FileSet{}
	for _, m := range b.Modules {
		files[strings.TrimPrefix(m.Path, "/")] = string(m.Raw)
	}
	if len(b.Data) > 0 {
		data, err := json.Marshal(b.Data)
		if err != nil {
			return nil, fmt.Errorf("bundle data: %w", err)
		}
		if _, taken := files["data.json"]; taken {
			return nil, fmt.Errorf("bundle has a module named data.json")
		}
		files["data.json"] = string(data)
	}
	return files, nil
}

package embed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/embed/embedtest"
)

// quickClient is a client against srv whose retries wait milliseconds.
func quickClient(t *testing.T, srv *embedtest.Server, o embed.ClientOptions) *embed.Client {
	t.Helper()
	o.URL = srv.URL
	if o.RetryInitial == 0 {
		o.RetryInitial, o.RetryMax = time.Millisecond, 5*time.Millisecond
	}
	c, err := embed.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("memory number %d about topic %d", i, i%7)
	}
	return out
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestClientEmbeds(t *testing.T) {
	cases := []struct {
		name        string
		texts       int
		batch       int
		wantBatches []int
	}{
		{"one text", 1, 0, []int{1}},
		{"one full batch", 64, 0, []int{64}},
		{"batches of the default size", 130, 0, []int{64, 64, 2}},
		{"batches of a set size", 7, 3, []int{3, 3, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := embedtest.NewServer(t, embedtest.Options{Dim: 32})
			c := quickClient(t, srv, embed.ClientOptions{BatchSize: tc.batch})
			in := texts(tc.texts)
			vs, err := c.Embed(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.Batches(); fmt.Sprint(got) != fmt.Sprint(tc.wantBatches) {
				t.Errorf("batches %v, want %v", got, tc.wantBatches)
			}
			if len(vs) != len(in) {
				t.Fatalf("%d vectors for %d texts", len(vs), len(in))
			}
			for i, v := range vs {
				if n := norm(v); math.Abs(n-1) > 1e-5 {
					t.Errorf("vector %d has norm %v, want 1", i, n)
				}
				// The fake answers in reverse order: each vector must be its text's.
				want := embedtest.Vector(in[i], 32)
				if got := cosine(v, want); got < 0.9999 {
					t.Errorf("vector %d is not its text's (cosine %v)", i, got)
				}
			}
			if c.Dimension() != 32 {
				t.Errorf("dimension %d, want 32", c.Dimension())
			}
		})
	}
}

func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d / (norm(a) * norm(b))
}

func TestClientErrors(t *testing.T) {
	cases := []struct {
		name      string
		opts      embedtest.Options
		client    embed.ClientOptions
		setup     func(*embedtest.Server)
		wantCalls int
		wantErr   []string // substrings of the error
		wantOK    bool
		timeouts  float64 // requests counted as timeouts
	}{
		{name: "a 503 passes on retry", setup: func(s *embedtest.Server) { s.FailNext(2, 503, "loading model") },
			wantCalls: 3, wantOK: true},
		{name: "a 429 passes on retry", setup: func(s *embedtest.Server) { s.FailNext(1, 429, "rate limited") },
			wantCalls: 2, wantOK: true},
		{name: "server errors past the tries", client: embed.ClientOptions{Tries: 3},
			setup: func(s *embedtest.Server) { s.FailNext(5, 500, "CUDA out of memory") }, wantCalls: 3,
			wantErr: []string{"500 Internal Server Error", "CUDA out of memory"}},
		{name: "a 400 is not retried", setup: func(s *embedtest.Server) { s.FailNext(1, 400, "input too long") },
			wantCalls: 1, wantErr: []string{"400 Bad Request", "input too long"}},
		{name: "unknown model", opts: embedtest.Options{Model: "nomic-embed-text"}, client: embed.ClientOptions{Model: "bge-m3"},
			wantCalls: 1, wantErr: []string{"404", `model "bge-m3" not found`}},
		{name: "wrong key", opts: embedtest.Options{APIKey: "sk-right"}, client: embed.ClientOptions{APIKey: "sk-wrong"},
			wantCalls: 1, wantErr: []string{"401", "Incorrect API key"}},
		{name: "right key", opts: embedtest.Options{APIKey: "sk-right"}, client: embed.ClientOptions{APIKey: "sk-right"},
			wantCalls: 1, wantOK: true},
		{name: "oversize answer", client: embed.ClientOptions{MaxResponseBytes: 4096},
			setup: func(s *embedtest.Server) { s.Pad(8192) }, wantCalls: 1, wantErr: []string{"more than 4096 bytes"}},
		{name: "a stalled server times out, each try", client: embed.ClientOptions{Timeout: 20 * time.Millisecond, Tries: 2},
			setup: func(s *embedtest.Server) { s.Stall() }, wantCalls: 2, wantErr: []string{"deadline exceeded"}, timeouts: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := embedtest.NewServer(t, tc.opts)
			reg := prometheus.NewRegistry()
			met, err := embed.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			tc.client.Metrics = met
			c := quickClient(t, srv, tc.client)
			if tc.setup != nil {
				tc.setup(srv)
			}
			vs, err := c.Embed(t.Context(), texts(3))
			if got := srv.Calls(); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
			okCount := requests(t, reg, embed.OutcomeOK)
			if tc.wantOK {
				if err != nil || len(vs) != 3 {
					t.Fatalf("got %d vectors, err %v; want 3", len(vs), err)
				}
				if okCount != 1 {
					t.Errorf("ok requests %v, want 1", okCount)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if okCount != 0 {
				t.Errorf("ok requests %v, want 0", okCount)
			}
			if got := requests(t, reg, embed.OutcomeTimeout); got != tc.timeouts {
				t.Errorf("timeouts %v, want %v", got, tc.timeouts)
			}
		})
	}
}

// metricValue reads one series from reg: the metric name, and for a
// labelled one the label's name and value.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, label ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(label) == 2 && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == label[0] && l.GetValue() == label[1]
			}) {
				continue
			}
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, label)
	return 0
}

func requests(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	return metricValue(t, reg, "memgate_embed_requests_total", "outcome", outcome)
}

func TestClientDimensionChange(t *testing.T) {
	srv := embedtest.NewServer(t, embedtest.Options{Dim: 16})
	c := quickClient(t, srv, embed.ClientOptions{})
	if _, err := c.Embed(t.Context(), texts(2)); err != nil {
		t.Fatal(err)
	}
	srv.SetDim(24)
	_, err := c.Embed(t.Context(), texts(2))
	if !errors.Is(err, embed.ErrDimension) {
		t.Fatalf("err %v, want ErrDimension", err)
	}
	if srv.Calls() != 2 {
		t.Errorf("%d calls, want 2: a changed dimension is not retried", srv.Calls())
	}
}

func TestClientStopsWithContext(t *testing.T) {
	srv := embedtest.NewServer(t, embedtest.Options{})
	c := quickClient(t, srv, embed.ClientOptions{})
	srv.Stall()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for srv.Calls() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := c.Embed(ctx, texts(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestNewClientRefuses(t *testing.T) {
	for _, u := range []string{"", "ftp://host/v1", "http://user:pw@host/v1", "http:///v1", "://"} {
		if _, err := embed.NewClient(embed.ClientOptions{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("error %q repeats the credentials", err)
		}
	}
}

func TestClientEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:11434/v1":             "http://127.0.0.1:11434/v1/embeddings",
		"http://127.0.0.1:11434/v1/":            "http://127.0.0.1:11434/v1/embeddings",
		"https://api.example.com/v1/embeddings": "https://api.example.com/v1/embeddings",
		"http://h/v1?api-version=2&key=secret":  "http://h/v1/embeddings",
	} {
		c, err := embed.NewClient(embed.ClientOptions{URL: in})
		if err != nil {
			t.Fatal(err)
		}
		if c.Endpoint() != want {
			t.Errorf("%s: endpoint %s, want %s", in, c.Endpoint(), want)
		}
	}
}

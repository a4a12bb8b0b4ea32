package testkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/memgate/memgate/memory"
)

func TestClocks(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	if c.Now() != t0 || c.Now() != t0 {
		t.Error("a still clock moved by itself")
	}
	c.Advance(time.Hour)
	if c.Now() != t0.Add(time.Hour) {
		t.Errorf("advanced an hour: %v", c.Now())
	}
	tk := NewTicking(t0, time.Millisecond)
	if a, b := tk.Now(), tk.Now(); !b.After(a) || a != t0.Add(time.Millisecond) {
		t.Errorf("a ticking clock read %v then %v", a, b)
	}
}

func TestApplyAll(t *testing.T) {
	d, err := ApplyAll.Classify(context.Background(), &memory.PolicyInput{Candidate: &memory.Record{}})
	if err != nil || d.Action != memory.ActionApply || d.Risk != memory.RiskLow {
		t.Errorf("ApplyAll: %+v, %v", d, err)
	}
}

func TestDecisions(t *testing.T) {
	cases := []struct {
		got, want memory.Decision
	}{
		{Apply(), memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
			Reasons: []memory.Reason{{Rule: "low_risk", Message: "low risk"}}}},
		{Reject("secret", "no secrets"), memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject,
			Reasons: []memory.Reason{{Rule: "secret", Message: "no secrets"}}}},
		{Review(memory.CategoryStrategy, "strategy", "needs a human"), memory.Decision{Risk: memory.RiskHigh,
			Action: memory.ActionReview, Categories: []string{memory.CategoryStrategy},
			Reasons: []memory.Reason{{Rule: "strategy", Message: "needs a human"}}}},
		{Review(memory.CategoryStrategy, "strategy", "needs a human", "publishing"), memory.Decision{Risk: memory.RiskHigh,
			Action: memory.ActionReview, Categories: []string{memory.CategoryStrategy},
			Reasons: []memory.Reason{{Rule: "strategy", Message: "needs a human"}}, Affects: []string{"publishing"}}},
	}
	for i, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%d: %+v, want %+v", i, c.got, c.want)
		}
	}
}

func TestAsJSON(t *testing.T) {
	got := AsJSON(t, struct {
		N int    `json:"n"`
		S string `json:"s"`
	}{2, "x"})
	if !reflect.DeepEqual(got, map[string]any{"n": 2.0, "s": "x"}) {
		t.Errorf("AsJSON: %#v", got)
	}
}

// gatherer gathers the same metric families every time.
type gatherer []*dto.MetricFamily

func (g gatherer) Gather() ([]*dto.MetricFamily, error) { return g, nil }

func TestMetricNames(t *testing.T) {
	names := []string{"a", "b_total"}
	g := gatherer{{Name: &names[0]}, {Name: &names[1]}}
	if got := MetricNames(t, g); !reflect.DeepEqual(got, names) {
		t.Errorf("MetricNames: %v", got)
	}
}

func TestStall(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if start := time.Now(); !Stall(r, 20*time.Millisecond) || time.Since(start) < 20*time.Millisecond {
		t.Error("Stall did not hold the answer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Stall(r.WithContext(ctx), time.Hour) {
		t.Error("Stall held the answer for a client that left")
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("looked %d times", n)
	}
}

func TestParkPolicies(t *testing.T) {
	for layer, want := range map[memory.Layer]memory.Action{memory.LayerPolicy: memory.ActionReview, memory.LayerKnowledge: memory.ActionApply} {
		d, err := ParkPolicies(context.Background(), &memory.PolicyInput{Candidate: &memory.Record{Layer: layer}})
		if err != nil || d.Action != want {
			t.Errorf("%s: %+v, %v; want %s", layer, d, err, want)
		}
	}
}

func TestByFirstWord(t *testing.T) {
	for _, c := range []struct {
		op      memory.Op
		summary string
		want    memory.Action
	}{
		{memory.OpWrite, "apply this", memory.ActionApply},
		{memory.OpWrite, "reject this", memory.ActionReject},
		{memory.OpWrite, "park this", memory.ActionReview},
		{memory.OpDelete, "park this", memory.ActionApply},
	} {
		d, err := ByFirstWord(context.Background(), &memory.PolicyInput{Op: c.op, Candidate: &memory.Record{Summary: c.summary}})
		if err != nil || d.Action != c.want {
			t.Errorf("%s %q: %+v, %v; want %s", c.op, c.summary, d, err, c.want)
		}
	}
}

func TestRules(t *testing.T) {
	state := &memory.Record{Layer: memory.LayerState, SubjectID: "s", FactType: "f", Summary: "on"}
	policy := &memory.Record{Layer: memory.LayerPolicy, Summary: "never publish"}
	for _, c := range []struct {
		in   memory.PolicyInput
		want memory.Action
	}{
		{memory.PolicyInput{Op: memory.OpWrite, Candidate: &memory.Record{Summary: "the Password is x"}}, memory.ActionReject},
		{memory.PolicyInput{Op: memory.OpWrite, Candidate: policy}, memory.ActionReview},
		{memory.PolicyInput{Op: memory.OpDelete, Candidate: &memory.Record{}, Current: policy}, memory.ActionReview},
		{memory.PolicyInput{Op: memory.OpWrite, Candidate: &memory.Record{Layer: memory.LayerState, SubjectID: "s", FactType: "f", Summary: "off"}, Current: state}, memory.ActionReview},
		{memory.PolicyInput{Op: memory.OpWrite, Candidate: state}, memory.ActionApply},
	} {
		d, err := Rules(context.Background(), &c.in)
		if err != nil || d.Action != c.want {
			t.Errorf("%+v: %+v, %v; want %s", c.in, d, err, c.want)
		}
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if n, err := b.Write([]byte("ab")); n != 2 || err != nil {
					t.Errorf("Write: %d, %v", n, err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if s := b.String(); len(s) != 8*100*2 || strings.Count(s, "ab") != 800 {
		t.Errorf("8 writers of 100 %q: %d bytes, %d of them", "ab", len(s), strings.Count(s, "ab"))
	}
}

func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Header.Get("X-Test"))
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s host=%s body=%s", r.Method, r.URL.Path, r.Host, b)
	}))
	defer srv.Close()
	status, body, h := Send(t, "POST", srv.URL+"/p", "hello", "X-Test", "v", "host", "example.test")
	if status != http.StatusTeapot || string(body) != "POST /p host=example.test body=hello" || h.Get("X-Echo") != "v" {
		t.Errorf("Send: %d %q %v", status, body, h)
	}
	if _, body, _ := Send(t, "GET", srv.URL+"/q", ""); !strings.HasPrefix(string(body), "GET /q host=127.0.0.1:") || !strings.HasSuffix(string(body), "body=") {
		t.Errorf("Send without a body or headers: %q", body)
	}
}

package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// journal records what happened, in order, from any goroutine.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
}

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.log, ",")
}

// want fails the test unless the journal reads want.
func (j *journal) want(t *testing.T, want string) {
	t.Helper()
	if got := j.String(); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

// listenLoopback listens on a free loopback port.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// failingListener fails its first Accept.
type failingListener struct{ net.Listener }

func (failingListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept: too many open files")
}

// testDaemon is a daemon with one listener (ln, or a fresh loopback one),
// the given loops, and a closer that records it ran; run's outcome arrives
// on the returned channel.
func testDaemon(t *testing.T, ctx context.Context, j *journal, ln net.Listener, loops ...loop) <-chan error {
	t.Helper()
	if ln == nil {
		ln = listenLoopback(t)
	}
	d := &daemon{log: slog.New(slog.DiscardHandler), loops: loops,
		listeners: []listener{{"agent listener", &http.Server{Handler: http.NotFoundHandler()}, ln}}}
	d.onClose(func() { j.add("store closed") })
	d.onClose(func() { j.add("index closed") })
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	return done
}

// blocking is a loop that runs until its context ends and records it.
func blocking(j *journal, name string) loop {
	return loop{name, func(ctx context.Context) error {
		<-ctx.Done()
		j.add(name + " stopped")
		return nil
	}}
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return")
		return nil
	}
}

// A stop by the context is clean: run returns nil, after every loop
// stopped and then the closers ran, the store last.
func TestRunStopsCleanlyWhenItsContextEnds(t *testing.T) {
	var j journal
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := testDaemon(t, ctx, &j, nil, blocking(&j, "outbox"), loop{"once", func(ctx context.Context) error {
		close(started) // a loop that ends by itself stops nothing
		return nil
	}})
	<-started
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("run: %v", err)
	}
	j.want(t, "outbox stopped,index closed,store closed")
}

// A failing loop stops the listeners and the other loops, and run returns
// its error, named.
func TestRunStopsEverythingWhenALoopFails(t *testing.T) {
	var j journal
	done := testDaemon(t, context.Background(), &j, nil, blocking(&j, "guard"), loop{"the outbox", func(context.Context) error {
		return errors.New("no store")
	}})
	err := wait(t, done)
	if err == nil || err.Error() != "the outbox: no store" {
		t.Fatalf("run: %v, want the outbox's failure", err)
	}
	j.want(t, "guard stopped,index closed,store closed")
}

// A failing listener stops the loops, and run returns its error.
func TestRunStopsEverythingWhenAListenerFails(t *testing.T) {
	ln := listenLoopback(t)
	defer ln.Close()
	var j journal
	err := wait(t, testDaemon(t, context.Background(), &j, failingListener{ln}, blocking(&j, "retention")))
	if err == nil || !strings.HasPrefix(err.Error(), "agent listener: ") || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("run: %v, want the listener's failure", err)
	}
	j.want(t, "retention stopped,index closed,store closed")
}

// The loops outlive the listeners: a request in flight when the stop
// comes is answered while they still run.
func TestRunDrainsTheListenersBeforeStoppingTheLoops(t *testing.T) {
	ln := listenLoopback(t)
	var j journal
	inFlight, release := make(chan struct{}), make(chan struct{})
	d := &daemon{log: slog.New(slog.DiscardHandler), loops: []loop{blocking(&j, "slack")},
		listeners: []listener{{"admin listener", &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inFlight)
			<-release
			j.add("request answered")
		})}, ln}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-inFlight
	cancel()
	time.Sleep(50 * time.Millisecond) // the shutdown waits for the request
	close(release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatalf("run: %v", err)
	}
	j.want(t, "request answered,slack stopped")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// daemon is what build made of the configuration: the listeners, bound;
// the background loops, not started; and what closes once both stopped.
// run runs it, once.
type daemon struct {
	log       *slog.Logger
	listeners []listener
	loops     []loop
	closers   []func() // run in reverse order by close: the store was opened first and closes last
	ready     atomic.Bool
	started   time.Time
	readyLog  []any // the attributes of "memgate ready"
}

// listener is one HTTP listener of the sidecar.
type listener struct {
	name string // "agent listener", "admin listener"
	srv  *http.Server
	ln   net.Listener
}

// loop is one background loop. run returns nil once ctx ended; an error
// before that stops the sidecar, and serve returns it.
type loop struct {
	name string // as the logs name it
	run  func(ctx context.Context) error
}

// shutdownTimeout bounds the listeners' graceful shutdown; a loop still
// running this long after it was told to stop is named in the log.
const shutdownTimeout = 10 * time.Second

// onClose adds fn to what close runs, before everything added earlier.
func (s *daemon) onClose(fn func()) { s.closers = append(s.closers, fn) }

// close runs the closers, the last added first. build calls it when it
// fails; run calls it after every listener and loop stopped.
func (s *daemon) close() {
	for _, fn := range slices.Backward(s.closers) {
		fn()
	}
	s.closers = nil
}

// run serves every listener and runs every loop under one errgroup until
// ctx ends or one of them fails, then shuts down along one path: readiness
// off, the listeners drained gracefully (at most shutdownTimeout; open MCP
// streams are closed), then the loops told to stop and waited for, then
// close (the search index, the embeddings' commit feed, the policy engine,
// the store last), so the store closes after every writer stopped. It
// returns the first failure, or nil after a stop by ctx.
func (s *daemon) run(ctx context.Context) error {
	g, failed := errgroup.WithContext(ctx)
	// The loops outlive the listeners: a request being answered may still
	// need them (Slack's interactions, the guard's files), and what they
	// write reaches the store before it closes.
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	for _, l := range s.listeners {
		g.Go(func() error {
			if err := l.srv.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("listener failed", "listener", l.name, "err", err)
				return fmt.Errorf("%s: %w", l.name, err)
			}
			return nil
		})
	}
	var running loopSet
	for _, l := range s.loops {
		running.add(l.name)
		g.Go(func() error {
			defer running.done(l.name)
			err := l.run(loopCtx)
			switch {
			case err == nil:
				return nil
			case loopCtx.Err() != nil: // told to stop: the stop was not clean, the sidecar stops anyway
				s.log.Warn("stopping "+l.name, "err", err)
				return nil
			}
			s.log.Error(l.name+" failed", "err", err)
			return fmt.Errorf("%s: %w", l.name, err)
		})
	}
	g.Go(func() error { // the one shutdown path
		<-failed.Done()
		s.ready.Store(false)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		for _, l := range s.listeners {
			if err := l.srv.Shutdown(sctx); err != nil {
				s.log.Warn("shutdown", "listener", l.name, "err", err)
			}
		}
		stopLoops()
		slow := time.AfterFunc(shutdownTimeout, func() {
			s.log.Warn("waiting for background loops to stop", "loops", running.names())
		})
		running.wait()
		slow.Stop()
		return nil
	})
	s.ready.Store(true)
	s.log.Info("memgate ready", append(s.readyLog, "startup", time.Since(s.started).Round(time.Millisecond).String())...)
	// Compiling the policy and the secret scanner's rules leaves tens of
	// megabytes of garbage the heap would otherwise keep until it grows
	// again: give it back once, after ready, so an idle sidecar holds only
	// what it uses.
	go debug.FreeOSMemory()
	err := g.Wait()
	s.close()
	s.log.Info("memgate stopped")
	return err
}

// loopSet is the names of the loops still running, for the log of a slow
// stop.
type loopSet struct {
	mu   sync.Mutex
	list []string
	wg   sync.WaitGroup
}

func (r *loopSet) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, name)
	r.wg.Add(1)
}

func (r *loopSet) done(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.list, name); i >= 0 {
		r.list = slices.Delete(r.list, i, i+1)
	}
	r.wg.Done()
}

func (r *loopSet) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

func (r *loopSet) wait() { r.wg.Wait() }

// Package sidecar starts and stops the real memgate binary for the
// benchmark and reliability tools, and talks to it over its HTTP APIs. It
// knows the binary's fixed contract (flags, MEMGATE_ADMIN_TOKEN, /readyz on
// the admin listener) and nothing of its insides.
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options describe one sidecar process.
type Options struct {
	Binary  string // path to the built cmd/sidecar
	DataDir string
	// Store is the shared store's URL, passed as --store (issue 17: a
	// postgres:// URL); "" keeps the embedded Badger under DataDir. A flag
	// rather than MEMGATE_STORE so a binary without it refuses to start
	// instead of running on Badger unnoticed.
	Store string
	Token string   // admin token; a fixed default when empty
	Env   []string // extra environment, KEY=VALUE
	Args  []string // extra flags
	// ReadyTimeout bounds the wait for /readyz (default 30s).
	ReadyTimeout time.Duration
}

// DefaultToken is the admin token used when Options.Token is empty.
const DefaultToken = "memgate-bench-token"

// Process is one running sidecar.
type Process struct {
	Agent string // agent listener base URL, http://127.0.0.1:port
	Admin string // admin listener base URL
	Token string
	// Ready is the time from exec to the first successful /readyz.
	Ready time.Duration

	cmd    *exec.Cmd
	logs   *tailBuffer
	exited chan struct{}
	err    error // the process's exit status, once exited is closed
}

// Start runs the binary on two free loopback ports and waits until it is
// ready. The process is killed if ctx ends before that.
func Start(ctx context.Context, o Options) (*Process, error) {
	if o.Token == "" {
		o.Token = DefaultToken
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	// A port found free may be taken before the sidecar binds it (by
	// another process this tool starts at the same time): try new ones.
	for attempt := 1; ; attempt++ {
		p, err := start(ctx, o)
		if err == nil || attempt == 3 || !errors.Is(err, errPortTaken) {
			return p, err
		}
	}
}

// errPortTaken: the sidecar exited because a listener's port was taken.
var errPortTaken = errors.New("a listener's port was taken")

func start(ctx context.Context, o Options) (*Process, error) {
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	agent, admin := addrs[0], addrs[1]
	p := &Process{Agent: "http://" + agent, Admin: "http://" + admin, Token: o.Token,
		logs: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	args := []string{"--data-dir", o.DataDir, "--listen", agent, "--admin-listen", admin}
	if o.Store != "" {
		args = append(args, "--store", o.Store)
	}
	args = append(args, o.Args...)
	p.cmd = exec.Command(o.Binary, args...)
	p.cmd.Env = append(append(os.Environ(), "MEMGATE_ADMIN_TOKEN="+o.Token), o.Env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	start := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, start, o.ReadyTimeout); err != nil {
		p.Kill()
		return nil, err
	}
	p.Ready = time.Since(start)
	return p, nil
}

// WaitReady waits until /readyz answers 200 again, as after its store came
// back (a database restart), for at most timeout.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration) error {
	return p.waitReady(ctx, time.Now(), timeout)
}

func (p *Process) waitReady(ctx context.Context, start time.Time, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := start.Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Admin+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			if strings.Contains(p.Logs(), "address already in use") {
				return fmt.Errorf("sidecar exited before it was ready: %w:\n%s", errPortTaken, p.Logs())
			}
			return fmt.Errorf("sidecar exited before it was ready (%v):\n%s", p.err, p.Logs())
		case <-ctx.Done():
			return fmt.Errorf("waiting for the sidecar: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sidecar not ready after %v:\n%s", timeout, p.Logs())
		}
	}
}

// Kill sends SIGKILL, as a crash would, and waits for the process to go.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// Stop asks the process to shut down (SIGTERM) and waits up to timeout
// before killing it.
func (p *Process) Stop(timeout time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop sidecar: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("sidecar did not stop within %v; killed", timeout)
	}
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Logs returns the tail of what the process wrote to stdout and stderr.
func (p *Process) Logs() string { return p.logs.String() }

// freeAddrs returns n distinct loopback addresses free a moment ago: the
// listeners are held open together, so no two of them are the same port.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Clone(string(b.buf))
}

package sidecar

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Fleet is several sidecar processes sharing one store (Options.Store),
// each with a data directory and ports of its own.
type Fleet struct {
	opts  Options
	Procs []*Process // Procs[i] is nil while instance i is down
}

// InstanceDir is the data directory of instance i under root.
func InstanceDir(root string, i int) string {
	return filepath.Join(root, fmt.Sprintf("instance-%d", i))
}

// StartFleet starts n instances one after another: instance i runs on
// InstanceDir(o.DataDir, i), or on o.DataDir itself when n is 1 (a single
// sidecar keeps the layout it had before fleets). On an error the started
// ones are killed.
func StartFleet(ctx context.Context, o Options, n int) (*Fleet, error) {
	f := NewFleet(o, n)
	for i := range n {
		if err := f.Start(ctx, i); err != nil {
			f.Kill()
			return nil, err
		}
	}
	return f, nil
}

// NewFleet returns a fleet of n instances none of which runs yet.
func NewFleet(o Options, n int) *Fleet { return &Fleet{opts: o, Procs: make([]*Process, n)} }

// Start starts instance i (again, after a kill), on fresh ports.
func (f *Fleet) Start(ctx context.Context, i int) error {
	o := f.opts
	if len(f.Procs) > 1 {
		o.DataDir = InstanceDir(f.opts.DataDir, i)
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("instance %d: %w", i, err)
	}
	p, err := Start(ctx, o)
	if err != nil {
		return fmt.Errorf("instance %d: %w", i, err)
	}
	f.Procs[i] = p
	return nil
}

// KillOne kills instance i with SIGKILL.
func (f *Fleet) KillOne(i int) {
	if p := f.Procs[i]; p != nil {
		p.Kill()
		f.Procs[i] = nil
	}
}

// Kill kills every running instance.
func (f *Fleet) Kill() {
	for i := range f.Procs {
		f.KillOne(i)
	}
}

// Stop asks every running instance to shut down, waiting up to timeout
// for each.
func (f *Fleet) Stop(timeout time.Duration) error {
	var errs []error
	for i, p := range f.Procs {
		if p != nil {
			errs = append(errs, p.Stop(timeout))
			f.Procs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// Agents are the agent listeners of the running instances.
func (f *Fleet) Agents() []string {
	var urls []string
	for _, p := range f.Procs {
		if p != nil {
			urls = append(urls, p.Agent)
		}
	}
	return urls
}

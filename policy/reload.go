package policy

import (
	"context"
	"time"
)

// reloadDir reads the policy directory and installs it if it changed.
func (c *Classifier) reloadDir(ctx context.Context) error {
	source := "dir " + c.opts.Dir
	files, err := ReadDir(c.opts.Dir)
	if err != nil {
		c.sourceFailed(source, err)
		return err
	}
	return c.install(ctx, files, source, true)
}

// pollDir re-reads the directory every PollInterval. Polling with content
// hashing, rather than file events, also sees the atomic symlink swap of a
// Kubernetes ConfigMap and editors that replace files, and costs a few small
// reads per interval.
func (c *Classifier) pollDir(ctx context.Context) {
	defer c.done.Done()
	every(ctx, c.opts.PollInterval, func() {
		_ = c.reloadDir(ctx) // refusals are logged and counted by install
	})
}

// every calls fn each interval until ctx is done: the polling of a policy
// directory and of a bundle server.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// sourceFailed reports a policy source that could not be read (a missing
// directory, an unreachable or unverifiable bundle), once per distinct error.
func (c *Classifier) sourceFailed(source string, err error) {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	key := source + ": " + err.Error()
	if key == c.lastFailure {
		return
	}
	c.lastFailure = key
	c.refused("", source, err)
}

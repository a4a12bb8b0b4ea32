package notify

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Backoff bounds how long a failed notice waits before its next attempt.
type Backoff struct {
	Initial time.Duration // wait after the first failure
	Max     time.Duration // the wait never grows past this
}

// withDefaults fills zero fields: 1s, doubling, up to 5 minutes.
func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = time.Second
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Minute
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	return b
}

// delay is how long to wait after the given number of failed attempts
// (1 = the first failure): exponential with jitter, at least retryAfter,
// since a server that says when to come back knows better than our curve.
// Attempts are stored with the notice, so the curve survives a restart.
func (b Backoff) delay(attempts int, retryAfter time.Duration) time.Duration {
	b = b.withDefaults()
	exp := &backoff.ExponentialBackOff{InitialInterval: b.Initial, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: b.Max}
	exp.Reset()
	var d time.Duration
	// Past ~30 doublings every curve has reached Max; stop counting there.
	for i := 0; i < min(max(attempts, 1), 32); i++ {
		d = exp.NextBackOff()
	}
	return max(min(d, b.Max), retryAfter)
}

package embed

import (
	"testing"
	"time"
)

// The wait between periodic passes is the period until a scan takes more
// than a tenth of it; then ten times the scan, so that the passes never take
// more than a tenth of the worker's time, however large the store.
func TestNextPass(t *testing.T) {
	for _, tt := range []struct {
		period, scanned, want time.Duration
	}{
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Second, 20 * time.Millisecond, 5 * time.Second},
		{5 * time.Second, 500 * time.Millisecond, 5 * time.Second},
		{5 * time.Second, 2 * time.Second, 20 * time.Second},
		{time.Millisecond, 3 * time.Millisecond, 30 * time.Millisecond},
	} {
		if got := nextPass(tt.period, tt.scanned); got != tt.want {
			t.Errorf("nextPass(%v, %v) = %v, want %v", tt.period, tt.scanned, got, tt.want)
		}
	}
}

package metrics

import (
	"regexp"
	"strings"
	"sync"
)

// otherValue is the label value of everything past a label's bound.
const otherValue = "other"

// labelSlug is what a caller-supplied label value must look like to be kept.
var labelSlug = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,39}$`)

// labelValues bounds the values one label takes. Known values always pass;
// up to extra other well-formed values are admitted first come, first
// served; everything else becomes "other". A caller-chosen string (a
// dialect, a rollback reason, a review route) can therefore never grow the
// number of series without bound.
type labelValues struct {
	empty string // the value of an empty input
	extra int

	mu       sync.Mutex
	known    map[string]bool
	admitted map[string]bool
}

func newLabelValues(empty string, extra int, known ...string) *labelValues {
	l := &labelValues{empty: empty, extra: extra, known: map[string]bool{}, admitted: map[string]bool{}}
	for _, k := range known {
		l.known[k] = true
	}
	return l
}

// value returns the label value to record for v.
func (l *labelValues) value(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return l.empty
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.known[v] || l.admitted[v]:
		return v
	case !labelSlug.MatchString(v) || len(l.admitted) >= l.extra:
		return otherValue
	}
	l.admitted[v] = true
	return v
}

// reasonCode extracts a label-friendly code from a free-text reason: the
// whole reason if it is a short slug ("wrong_inference"), or the part before
// a colon ("wrong_inference: the model guessed the flag"). Anything else is
// "other", so prose never becomes a label value.
func reasonCode(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ""
	}
	if code, _, ok := strings.Cut(reason, ":"); ok {
		reason = code
	}
	reason = strings.ToLower(strings.TrimSpace(reason))
	if !labelSlug.MatchString(reason) {
		return otherValue
	}
	return reason
}

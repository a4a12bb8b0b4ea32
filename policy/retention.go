package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// parseRetention reads data.memgate_config.retention: how long superseded,
// rejected and rolled-back versions keep their text, per layer, e.g.
//
//	"retention": {"default_days": 365, "days": {"knowledge": 90, "preference": "36h"}}
//
// Each period is a whole number of days, or a string: a number of days
// ("90d") or a Go duration ("36h", "90m", "30s", "1h30m"). Absent, 0 or
// "0s": kept for ever. Anything else (a fraction of a day as a number, a
// negative period, an unknown unit or key) is an error naming where, and
// the policy is not installed. See memory.Retention.
func parseRetention(data map[string]any) (memory.Retention, error) {
	var r memory.Retention
	mg, _ := data[ConfigRoot].(map[string]any)
	raw, ok := mg["retention"]
	if !ok {
		return r, nil
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return r, fmt.Errorf("data memgate_config.retention: want an object")
	}
	for k, v := range spec {
		switch k {
		case "default_days":
			d, err := retentionPeriod(v)
			if err != nil {
				return r, fmt.Errorf("data memgate_config.retention.default_days: %w", err)
			}
			r.Default = d
		case "days":
			layers, ok := v.(map[string]any)
			if !ok {
				return r, fmt.Errorf("data memgate_config.retention.days: want an object of layer: days")
			}
			r.Layers = map[memory.Layer]time.Duration{}
			for name, n := range layers {
				l := memory.Layer(name)
				if !l.Valid() {
					return r, fmt.Errorf("data memgate_config.retention.days: unknown layer %q", name)
				}
				d, err := retentionPeriod(n)
				if err != nil {
					return r, fmt.Errorf("data memgate_config.retention.days.%s: %w", name, err)
				}
				r.Layers[l] = d
			}
		default:
			return r, fmt.Errorf("data memgate_config.retention: unknown key %q (want default_days, days)", k)
		}
	}
	return r, nil
}

// errPeriod says what a retention period may be.
const errPeriod = `want a whole number of days (0 or more), or a string such as "90d", "36h" or "30s"`

// day is a retention day: 24 hours, whatever the calendar.
const day = 24 * time.Hour

// retentionPeriod reads one retention period of policy data (see
// parseRetention): a JSON number of whole days or a duration string.
func retentionPeriod(v any) (time.Duration, error) {
	switch v := v.(type) {
	case string:
		return parsePeriod(v)
	case float64:
		return wholeDays(v)
	case interface{ Float64() (float64, error) }: // json.Number
		n, err := v.Float64()
		if err != nil {
			return 0, fmt.Errorf("%s, not %v", errPeriod, v)
		}
		return wholeDays(n)
	default:
		return 0, fmt.Errorf("%s, not %v", errPeriod, v)
	}
}

// wholeDays is n days, for a whole n from 0 to the most a Duration holds.
func wholeDays(n float64) (time.Duration, error) {
	if n < 0 || n != float64(int64(n)) || n > float64(maxDays) {
		return 0, fmt.Errorf("%s, not %v", errPeriod, n)
	}
	return time.Duration(n) * day, nil
}

// maxDays is the most days a time.Duration holds (about 292 years).
const maxDays = int64(1<<63-1) / int64(day)

// parsePeriod reads "90d" (whole days) or a Go duration ("36h", "1h30m").
func parsePeriod(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days < 0 || days > maxDays {
			return 0, fmt.Errorf("%s, not %q", errPeriod, s)
		}
		return time.Duration(days) * day, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s, not %q", errPeriod, s)
	}
	return d, nil
}

// Retention is the retention the current policy's data sets (none before
// a policy is installed).
func (c *Classifier) Retention() memory.Retention {
	if p := c.Current(); p != nil {
		return p.retention
	}
	return memory.Retention{}
}

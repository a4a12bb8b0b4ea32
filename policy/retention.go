package policy

import (
	"fmt"
	"time"

	"github.com/memgate/memgate/memory"
)

// parseRetention reads data.memgate_config.retention: how many days
// superseded, rejected and rolled-back versions keep their text, per
// layer, e.g.
//
//	"retention": {"default_days": 365, "days": {"knowledge": 90, "preference": 30}}
//
// Absent, or 0: kept for ever. See memory.Retention.
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
	days := func(where string, v any) (time.Duration, error) {
		n, ok := v.(float64)
		if !ok {
			if j, isNum := v.(interface{ Float64() (float64, error) }); isNum {
				var err error
				if n, err = j.Float64(); err != nil {
					return 0, fmt.Errorf("%s: %w", where, err)
				}
				ok = true
			}
		}
		if !ok || n < 0 || n != float64(int64(n)) {
			return 0, fmt.Errorf("%s: want a whole number of days, 0 or more", where)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	for k, v := range spec {
		switch k {
		case "default_days":
			d, err := days("data memgate_config.retention.default_days", v)
			if err != nil {
				return r, err
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
				d, err := days("data memgate_config.retention.days."+name, n)
				if err != nil {
					return r, err
				}
				r.Layers[l] = d
			}
		default:
			return r, fmt.Errorf("data memgate_config.retention: unknown key %q (want default_days, days)", k)
		}
	}
	return r, nil
}

// Retention is the retention the current policy's data sets (none before
// a policy is installed).
func (c *Classifier) Retention() memory.Retention {
	if p := c.Current(); p != nil {
		return p.retention
	}
	return memory.Retention{}
}

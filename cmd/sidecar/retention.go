package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
)

// retentionWorker runs the retention pass (memory.RetentionPass) every
// interval, a bounded round at a time, with the rules of the policy in
// force (its data's memgate_config.retention).
type retentionWorker struct {
	gov      *memory.Governor
	rules    func() memory.Retention
	interval time.Duration
	batch    int
	metrics  *metrics.Retention
	log      *slog.Logger
}

// Run rounds until ctx ends, then returns nil: a failed round is logged,
// counted and tried again at the next.
func (w *retentionWorker) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// round runs one bounded round and records it.
func (w *retentionWorker) round(ctx context.Context) {
	res, err := w.gov.RetentionPass(ctx, w.rules(), w.batch)
	if err != nil {
		if ctx.Err() == nil {
			w.metrics.Failed()
			w.log.Error("retention round failed; the next one tries again", "err", err)
		}
		return
	}
	w.metrics.Round(res.Purged, res.Expired, res.Behind, time.Now())
	if res.Purged+res.Expired+res.Behind > 0 {
		w.log.Info("retention round", "purged", res.Purged, "events", res.Events, "expired", res.Expired, "behind", res.Behind)
	}
}

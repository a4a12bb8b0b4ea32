package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/memory"
)

// QueueReader reads the review queue (*memory.Governor implements it).
type QueueReader interface {
	Queue(ctx context.Context) (memory.QueueStats, error)
}

// SizeReader reports the store's on-disk size (*store.Store implements it).
type SizeReader interface {
	Size() (lsm, vlog int64)
}

// Sources are what a StateCollector reads on each scrape. A nil source is
// skipped, and its metrics are not exported.
type Sources struct {
	Queue  QueueReader
	Size   SizeReader
	Outbox memory.Store // its undelivered notices are counted with ScanNotices
	// Now is the clock ages are measured with; it should be the governor's.
	Now func() time.Time
	// Timeout bounds one scrape's reads (default 5s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// StateCollector reads memgate's state when Prometheus scrapes: review queue
// depth and the age of its oldest item, outbox depth and the age of its
// oldest notice, and the store's size. Reading at scrape time keeps the
// values right after a restart, with nothing to keep in step.
type StateCollector struct {
	src Sources

	queueDepth  *prometheus.Desc
	queueOldest *prometheus.Desc
	outboxDepth *prometheus.Desc
	outboxOld   *prometheus.Desc
	storeSize   *prometheus.Desc
}

var _ prometheus.Collector = (*StateCollector)(nil)

// NewStateCollector returns a collector over src; register it with the
// same registry as New's metrics.
func NewStateCollector(src Sources) *StateCollector {
	if src.Now == nil {
		src.Now = time.Now
	}
	if src.Timeout <= 0 {
		src.Timeout = 5 * time.Second
	}
	if src.Logger == nil {
		src.Logger = slog.New(slog.DiscardHandler)
	}
	name := func(sub, n string) string { return prometheus.BuildFQName(Namespace, sub, n) }
	return &StateCollector{
		src: src,
		queueDepth: prometheus.NewDesc(name("review", "queue_depth"),
			"Parked writes waiting for a review decision.", nil, nil),
		queueOldest: prometheus.NewDesc(name("review", "queue_oldest_age_seconds"),
			"How long the oldest parked write has waited for review (0 when the queue is empty).", nil, nil),
		outboxDepth: prometheus.NewDesc(name("outbox", "depth"),
			"Reviewer notifications waiting in the outbox to be delivered.", nil, nil),
		outboxOld: prometheus.NewDesc(name("outbox", "oldest_age_seconds"),
			"How long the oldest undelivered notification has waited (0 when the outbox is empty).", nil, nil),
		storeSize: prometheus.NewDesc(name("store", "size_bytes"),
			"On-disk size of the memory store, by part: lsm (keys and small values) and vlog (the value log).", []string{"part"}, nil),
	}
}

// Describe sends the descriptors of the sources that are set.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.src.Queue != nil {
		ch <- c.queueDepth
		ch <- c.queueOldest
	}
	if c.src.Outbox != nil {
		ch <- c.outboxDepth
		ch <- c.outboxOld
	}
	if c.src.Size != nil {
		ch <- c.storeSize
	}
}

// Collect reads each source. A source that fails sends invalid metrics, so
// the scrape reports the error instead of silently dropping the series that
// alerts depend on.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.src.Timeout)
	defer cancel()
	now := c.src.Now()
	if c.src.Queue != nil {
		q, err := c.src.Queue.Queue(ctx)
		if err != nil {
			c.fail(ch, fmt.Errorf("read the review queue: %w", err), c.queueDepth, c.queueOldest)
		} else {
			ch <- prometheus.MustNewConstMetric(c.queueDepth, prometheus.GaugeValue, float64(q.Depth))
			ch <- prometheus.MustNewConstMetric(c.queueOldest, prometheus.GaugeValue, age(now, q.OldestParked))
		}
	}
	if c.src.Outbox != nil {
		depth, oldest, err := c.outbox(ctx)
		if err != nil {
			c.fail(ch, fmt.Errorf("read the outbox: %w", err), c.outboxDepth, c.outboxOld)
		} else {
			ch <- prometheus.MustNewConstMetric(c.outboxDepth, prometheus.GaugeValue, float64(depth))
			ch <- prometheus.MustNewConstMetric(c.outboxOld, prometheus.GaugeValue, age(now, oldest))
		}
	}
	if c.src.Size != nil {
		lsm, vlog := c.src.Size.Size()
		ch <- prometheus.MustNewConstMetric(c.storeSize, prometheus.GaugeValue, float64(lsm), "lsm")
		ch <- prometheus.MustNewConstMetric(c.storeSize, prometheus.GaugeValue, float64(vlog), "vlog")
	}
}

func (c *StateCollector) outbox(ctx context.Context) (depth int, oldest time.Time, err error) {
	err = c.src.Outbox.View(ctx, func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(n *memory.Notice) bool {
			if depth == 0 || n.At.Before(oldest) {
				oldest = n.At
			}
			depth++
			return true
		})
	})
	return depth, oldest, err
}

func (c *StateCollector) fail(ch chan<- prometheus.Metric, err error, descs ...*prometheus.Desc) {
	c.src.Logger.Warn("metrics: collecting state failed", "err", err)
	for _, d := range descs {
		ch <- prometheus.NewInvalidMetric(d, err)
	}
}

// age is how long ago t was, in seconds; 0 for the zero time (nothing
// waiting) and for a t in the future (clock skew).
func age(now, t time.Time) float64 {
	if t.IsZero() || t.After(now) {
		return 0
	}
	return now.Sub(t).Seconds()
}

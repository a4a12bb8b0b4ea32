package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// QueueReader reads the review queue (*memory.Governor implements it).
type QueueReader interface {
	Queue(ctx context.Context) (memory.QueueStats, error)
}

// DiskReader reports what the store occupies on disk and the space left on
// its volume (*store.Store implements it).
type DiskReader interface {
	DiskUsage() (storeapi.Usage, error)
}

// Sources are what a StateCollector reads on each scrape. A nil source is
// skipped, and its metrics are not exported.
type Sources struct {
	Queue  QueueReader
	Disk   DiskReader
	Outbox memory.Store // its undelivered notices are counted with ScanNotices
	// Now is the clock ages are measured with; it should be the governor's.
	Now func() time.Time
	// Timeout bounds one scrape's reads (default 5s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// StateCollector reads memgate's state when Prometheus scrapes: review queue
// depth and the age of its oldest item, outbox depth and the age of its
// oldest notice, the store's disk usage and the space left on its volume.
// Reading at scrape time keeps the
// values right after a restart, with nothing to keep in step.
type StateCollector struct {
	src Sources

	queueDepth  *prometheus.Desc
	queueOldest *prometheus.Desc
	outboxDepth *prometheus.Desc
	outboxOld   *prometheus.Desc
	storeSize   *prometheus.Desc
	volumeFree  *prometheus.Desc
	volumeSize  *prometheus.Desc
	reserve     *prometheus.Desc
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
			"Disk space the memory store's files occupy (allocated blocks, not preallocated length), by part: lsm (tables of keys and small values), vlog (the value log), wal (the memtables' write-ahead logs), other.",
			[]string{"part"}, nil),
		volumeFree: prometheus.NewDesc(name("data_volume", "free_bytes"),
			"Bytes available to memgate on the filesystem holding the store; writes are refused below memgate_store_write_reserve_bytes.", nil, nil),
		volumeSize: prometheus.NewDesc(name("data_volume", "size_bytes"),
			"Size of the filesystem holding the store.", nil, nil),
		reserve: prometheus.NewDesc(name("store", "write_reserve_bytes"),
			"Free space below which the store refuses writes (507) so that its database never finds the disk full; 0 when the guard is off.", nil, nil),
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
	if c.src.Disk != nil {
		ch <- c.storeSize
		ch <- c.volumeFree
		ch <- c.volumeSize
		ch <- c.reserve
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
	if c.src.Disk != nil {
		c.disk(ch)
	}
}

func (c *StateCollector) disk(ch chan<- prometheus.Metric) {
	u, err := c.src.Disk.DiskUsage()
	if err != nil {
		c.fail(ch, fmt.Errorf("read the disk usage: %w", err), c.storeSize, c.volumeFree, c.volumeSize, c.reserve)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.storeSize, float64(u.Tables), "lsm")
	gauge(c.storeSize, float64(u.ValueLog), "vlog")
	gauge(c.storeSize, float64(u.WAL), "wal")
	gauge(c.storeSize, float64(u.Other), "other")
	gauge(c.reserve, float64(u.WriteReserve))
	if u.HasVolume { // not read off Linux: no series rather than a zero that alerts
		gauge(c.volumeFree, float64(u.VolumeFree))
		gauge(c.volumeSize, float64(u.VolumeSize))
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

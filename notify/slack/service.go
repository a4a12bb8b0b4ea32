package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Governor is what the Slack integration needs of *memory.Governor.
type Governor interface {
	Get(ctx context.Context, id string) (*memory.Record, error)
	Review(ctx context.Context, id string) (*memory.ReviewItem, error)
	Explain(ctx context.Context, id string) (*memory.Explanation, error)
	Approve(ctx context.Context, id string, rv memory.Review) (*memory.Record, error)
	Reject(ctx context.Context, id string, rv memory.Review) (*memory.Record, error)
}

var _ Governor = (*memory.Governor)(nil)

// Deps are the Slack integration's collaborators. Gov and KV are required.
type Deps struct {
	Gov        Governor
	KV         storeapi.KV // *store.Store: where each record's message is remembered
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: metrics not registered
	HTTPClient *http.Client          // default: a client with a 15s timeout
	Now        func() time.Time
	// OnReady is called when Slack becomes ready: the first passing check,
	// or a check or delivery that succeeds after a failure. Wire it to
	// (*notify.Outbox).RetryNow so notices that waited for a fixed token or
	// an invite go out at once instead of when their backoff ends.
	OnReady func()
}

// Service is the Slack integration: a notify.Notifier for the outbox, the
// signed HTTP interactivity handler, and (with an app token) a Socket Mode
// connection.
type Service struct {
	cfg       Config
	api       *slack.Client
	gov       Governor
	refs      refs
	reviewers *reviewers
	log       *slog.Logger
	metrics   *metrics
	now       func() time.Time
	health    health
	nudge     chan struct{} // a delivery met a settings error: re-check soon
	onReady   func()

	started  atomic.Bool    // Run was called
	running  sync.WaitGroup // Run's loops
	handling sync.WaitGroup // interactions being handled
}

// New validates cfg and returns the integration; Run connects Socket Mode.
func New(cfg Config, d Deps) (*Service, error) {
	if !cfg.Enabled() {
		return nil, errors.New("slack: no bot token (MEMGATE_SLACK_BOT_TOKEN): Slack is off")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Gov == nil || d.KV == nil {
		return nil, errors.New("slack: a governor and a key-value store are required")
	}
	s := &Service{cfg: cfg, gov: d.Gov, refs: refs{kv: d.KV}, log: d.Logger, now: d.Now,
		nudge: make(chan struct{}, 1), onReady: d.OnReady}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "slack")
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	s.metrics = newMetrics(d.Registerer)
	s.api = slack.New(cfg.BotToken, s.clientOptions(d.HTTPClient, cfg.AppToken)...)
	s.reviewers = newReviewers(cfg.Reviewers, cfg.ReviewerGroup, cfg.GroupCacheTTL,
		func(ctx context.Context, group string) ([]string, error) {
			return s.api.GetUserGroupMembersContext(ctx, group)
		}, s.now, s.log)
	if len(cfg.Reviewers) == 0 && cfg.ReviewerGroup == "" {
		s.log.Warn("no Slack reviewers configured (MEMGATE_SLACK_REVIEWERS, MEMGATE_SLACK_REVIEWER_GROUP): every button click will be refused; decide with the CLI")
	}
	if cfg.AppToken == "" && cfg.SigningSecret == "" {
		s.log.Warn("neither an app token (Socket Mode) nor a signing secret (HTTP endpoint) is set: review messages are posted but buttons cannot reach memgate")
	}
	return s, nil
}

func (s *Service) clientOptions(hc *http.Client, appToken string) []slack.Option {
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	opts := []slack.Option{slack.OptionHTTPClient(hc),
		slack.OptionLog(slog.NewLogLogger(s.log.Handler(), slog.LevelDebug))}
	if s.cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(s.cfg.APIURL))
	}
	if appToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(appToken))
	}
	return opts
}

// Run checks the Slack settings once (Check: the bot token, the channel;
// a failure is a warning, never an error: memgate runs and the review queue
// works from the CLI), then re-checks them periodically and, with an app
// token, keeps Socket Mode connected, until ctx ends. It then waits for the
// interactions being handled and returns nil; a second Run is an error.
// The HTTP endpoint and the outbox work without Run.
func (s *Service) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("slack: already running")
	}
	_ = s.Check(ctx) // logged and counted by Check
	s.running.Go(func() { s.checkLoop(ctx) })
	if s.cfg.AppToken != "" {
		s.running.Go(func() { s.socketMode(ctx) })
	}
	s.running.Wait()
	s.handling.Wait()
	return nil
}

type metrics struct {
	interactions  *prometheus.CounterVec
	ready         prometheus.Gauge
	checkFailures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{interactions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memgate_slack_interactions_total",
		Help: "Slack button clicks and dialogs handled, by action and result (ok, stale, already_decided, not_allowed, ...).",
	}, []string{"action", "result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memgate_slack_ready",
			Help: "1 when the last Slack check or delivery found the bot token and the review channel working, 0 while notices wait for a fix (see the log for it).",
		}),
		checkFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_slack_check_failures_total",
			Help: "Failed Slack checks (auth.test, conversations.info) at start and periodically, by reason (token, scope, channel_not_found, not_in_channel, archived, restricted, unreachable, other).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.interactions, m.ready, m.checkFailures)
	}
	return m
}

func (m *metrics) interaction(action, result string) {
	m.interactions.WithLabelValues(action, result).Inc()
}

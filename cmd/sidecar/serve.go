package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/guard"
	memjudge "github.com/memgate/memgate/judge"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/notify"
	slacknotify "github.com/memgate/memgate/notify/slack"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
	memgatemcp "github.com/memgate/memgate/proxy/mcp"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/relate"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/secrets"
)

// serveConfig is the sidecar's configuration: flags, each also settable as
// MEMGATE_<NAME>.
type serveConfig struct {
	dataDir            string
	store              string
	openShared         openShared    // opens a --store database; nil: openPostgres (tests give another)
	storeWait          time.Duration // how long start waits for a database that does not answer; 0: storeWait
	listen             string
	adminListen        string
	debugListen        string
	policyDir          string
	policyBundle       string
	policyTimeout      time.Duration
	policyMode         string
	policyBundlePoll   time.Duration
	policyBundleKey    string
	policyBundleKeyAlg string
	noSync             bool
	groupCommit        bool
	mem0DeleteErases   bool
	retentionInterval  time.Duration
	retentionBatch     int
	logLevel           string
	logFormat          string
	slack              slacknotify.Config
	extractorURL       string
	extractorModel     string
	extractorRelate    bool
	relateTimeout      time.Duration
	judgeURL           string
	judgeModel         string
	judgeTimeout       time.Duration
	agentKeysFile      string
	allowNoKeys        bool
	generateAgentKey   bool
	embedURL           string
	embedModel         string
	allowedHosts       string
	allowedOrigins     string
	mcpMaxSessions     int
	mcpMaxStreams      int
	mcpSessionTimeout  time.Duration
	guardDirs          listFlag
	guardGlobs         listFlag
	guardSubject       string
	guardMaxFileBytes  int64
	guardMaxEntries    int
}

// listFlag is a repeatable flag; each value may also be comma-separated,
// which is how MEMGATE_<NAME> sets it.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, commaList(v)...)
	return nil
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "memgate-data", "directory of the memory database and the generated admin token")
	fs.StringVar(&c.store, "store", "", "the memory database (env MEMGATE_STORE): empty for the embedded Badger store under --data-dir, or postgres://user@host:5432/db (also postgresql://) for one PostgreSQL database that a fleet of memgate instances shares: memory, review queue, audit log and Slack outbox")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7600", "agent listener address (native, Mem0 and MCP APIs)")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:7601", "admin listener address (review, rollback, metrics)")
	fs.StringVar(&c.debugListen, "debug-listen", "", "loopback address serving Go's profiler (/debug/pprof/); empty: off")
	fs.StringVar(&c.policyDir, "policy-dir", "", "directory of Rego policy replacing the built-in default (reloaded on change)")
	fs.StringVar(&c.policyBundle, "policy-bundle", "", "URL of an OPA bundle to pull and poll instead of a local policy")
	fs.DurationVar(&c.policyBundlePoll, "policy-bundle-poll", policy.DefaultBundlePollInterval, "how often the bundle server is asked for a new bundle")
	fs.StringVar(&c.policyBundleKey, "policy-bundle-key", "", "file with the PEM public key (or HMAC secret) bundles must be signed with; empty: unsigned bundles")
	fs.StringVar(&c.policyBundleKeyAlg, "policy-bundle-key-algorithm", "RS256", "signing algorithm of --policy-bundle-key")
	fs.DurationVar(&c.policyTimeout, "policy-timeout", 250*time.Millisecond, "bound on one policy evaluation; past it the write is parked")
	fs.StringVar(&c.policyMode, "policy-mode", string(memory.PolicyEnforce), "enforce, or shadow: apply what policy would park or reject (never a secret), count it and list it (review list --shadow); switch at run time with `sidecar policy mode`")
	fs.BoolVar(&c.noSync, "no-sync", false, "do not fsync commits at all (faster; acknowledged writes may be lost on a crash); wins over --group-commit")
	fs.DurationVar(&c.retentionInterval, "retention-interval", time.Hour, "how often the retention pass runs (policy data memgate_config.retention; Mem0 expiration_date); 0 turns it off")
	fs.IntVar(&c.retentionBatch, "retention-batch", 1000, "the most versions and expiries one retention round handles; the rest waits for the next (memgate_retention_behind)")
	fs.BoolVar(&c.mem0DeleteErases, "mem0-delete-erases", false, "make Mem0's delete by entity on the agent listener (DELETE /v1/memories/?user_id=…, OSS DELETE /memories) an erasure of that scope, within the caller's tenant, instead of governed deletions (see README, Data protection)")
	fs.BoolVar(&c.groupCommit, "group-commit", true, "concurrent commits share one fsync, each still durable before it is acknowledged; false: one fsync per commit (Badger SyncWrites)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.extractorURL, "extractor-url", "", "OpenAI-compatible chat-completions endpoint that extracts facts from Mem0 adds with infer=true (e.g. http://127.0.0.1:8080/v1); empty: each message is a candidate")
	fs.StringVar(&c.extractorModel, "extractor-model", "gpt-4o-mini", "model name sent to --extractor-url")
	fs.BoolVar(&c.extractorRelate, "extractor-relate", true, "with --extractor-url, also show the model each extracted fact beside the active memories it may repeat or update (Mem0's update step: ADD, UPDATE, DELETE, NONE); its answer is used only where it cannot lower risk, and any failure leaves the comparison without a model")
	fs.DurationVar(&c.relateTimeout, "extractor-relate-timeout", relate.DefaultTimeout, "bound on one question of --extractor-relate; past it the comparison without a model decides (the subject's other free-text writes wait meanwhile)")
	fs.StringVar(&c.judgeURL, "judge-url", "", "OpenAI-compatible chat-completions endpoint whose model also classifies each write's text, as input.judge (key in MEMGATE_JUDGE_API_KEY); empty: no judge")
	fs.StringVar(&c.embedURL, "embed-url", "", "OpenAI-compatible /v1/embeddings endpoint (Ollama, llama.cpp, vLLM, OpenAI; key in MEMGATE_EMBED_API_KEY) that makes search semantic as well as lexical; empty: lexical only")
	fs.StringVar(&c.embedModel, "embed-model", embed.DefaultModel, "model name sent to --embed-url")
	fs.StringVar(&c.judgeModel, "judge-model", "gpt-4o-mini", "model name sent to --judge-url")
	fs.DurationVar(&c.judgeTimeout, "judge-timeout", 2*time.Second, "bound on one judge request; past it the rules' verdict stands alone")
	fs.StringVar(&c.agentKeysFile, "agent-keys-file", "", "JSON file of agent keys and the tenants they bind (see SECURITY.md); added to the keys in MEMGATE_AGENT_KEYS (alias MEMGATE_MEM0_API_KEYS)")
	fs.BoolVar(&c.allowNoKeys, "allow-unauthenticated", false, "serve the agent listener on a non-loopback address without agent keys (any caller that reaches it reads and writes every memory)")
	fs.BoolVar(&c.generateAgentKey, "generate-agent-key", false, "when the agent listener is not on loopback and no agent keys are set, require a key generated into <data-dir>/"+agentKeyFile+" (the container image sets this)")
	fs.StringVar(&c.allowedHosts, "allowed-hosts", "", "comma-separated Host names (name or name:port; * for any) also accepted: on a loopback listener besides localhost/127.0.0.1/[::1] (e.g. the name a reverse proxy or tunnel forwards under); on a routable listener the only names accepted besides its address")
	fs.StringVar(&c.allowedOrigins, "allowed-origins", "", "comma-separated browser origins (https://app.example.com) allowed to call memgate, with CORS; by default requests from browser pages are refused")
	fs.IntVar(&c.mcpMaxSessions, "mcp-max-sessions", memgatemcp.DefaultMaxSessions, "most open MCP sessions (about 15 KB each); past it a new session is refused with 503")
	fs.IntVar(&c.mcpMaxStreams, "mcp-max-streams", memgatemcp.DefaultMaxStreams, "most MCP responses open at once, event streams (at most half) and calls in flight; past it 429")
	fs.DurationVar(&c.mcpSessionTimeout, "mcp-session-timeout", memgatemcp.DefaultSessionTimeout, "close an MCP session no request has used this long")
	fs.Var(&c.guardDirs, "guard-dir", "a workspace whose Markdown memory files memgate governs (repeatable, or comma-separated)")
	fs.Var(&c.guardGlobs, "guard-glob", "files under each --guard-dir to govern (repeatable; default MEMORY.md, memory/**/*.md, USER.md, CLAUDE.md, AGENTS.md)")
	fs.StringVar(&c.guardSubject, "guard-subject", "", "subject of the guarded files' entries (default: the workspace directory's name)")
	fs.Int64Var(&c.guardMaxFileBytes, "guard-max-file-bytes", guard.DefaultMaxFileBytes, "largest guarded file memgate reads; a larger one is refused (never read past the cap), its accepted entries kept, and /readyz names it")
	fs.IntVar(&c.guardMaxEntries, "guard-max-entries", guard.DefaultMaxEntries, "most entries in one guarded file (each is a write to judge); a file with more is refused like one over --guard-max-file-bytes")
	c.slack.RegisterFlags(fs)
}

// agentKeys reads the agent listener's keys: MEMGATE_AGENT_KEYS, its older
// name MEMGATE_MEM0_API_KEYS, and --agent-keys-file. Without keys the
// listener must bind loopback, unless --allow-unauthenticated says
// otherwise explicitly.
func agentKeys(cfg serveConfig, getenv func(string) string, log *slog.Logger) (*proxy.AgentKeys, error) {
	var keys []proxy.AgentKey
	for _, name := range []string{"MEMGATE_AGENT_KEYS", "MEMGATE_MEM0_API_KEYS"} {
		more, err := proxy.ParseAgentKeys(getenv(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		keys = append(keys, more...)
	}
	if cfg.agentKeysFile != "" {
		more, err := proxy.LoadAgentKeysFile(cfg.agentKeysFile)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
	}
	if err := proxy.CheckAgentKeys(keys); err != nil {
		return nil, err
	}
	bound := 0
	for _, k := range keys {
		if k.Tenant.Bound() {
			bound++
		}
	}
	if len(keys) == 0 && !loopback(cfg.listen) && cfg.generateAgentKey {
		path := filepath.Join(cfg.dataDir, agentKeyFile)
		key, err := secretFile(path, "agent key", log)
		if err != nil {
			return nil, err
		}
		if keys, err = proxy.ParseAgentKeys(key); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	switch {
	case len(keys) > 0:
		log.Info("agent keys required on every agent route", "keys", len(keys), "tenantBound", bound)
	case !loopback(cfg.listen) && !cfg.allowNoKeys:
		return nil, fmt.Errorf("the agent listener %s is not on loopback and no agent keys are set: set MEMGATE_AGENT_KEYS "+
			"(or --agent-keys-file), bind --listen to 127.0.0.1, or pass --allow-unauthenticated", cfg.listen)
	case !loopback(cfg.listen):
		log.Warn("--allow-unauthenticated: no agent keys, and the agent listener is not on loopback: any caller that reaches it reads and writes every memory", "listen", cfg.listen)
	default:
		log.Warn("no agent keys set: any local process can read and write every memory through the agent listener (set MEMGATE_AGENT_KEYS to require keys)", "listen", cfg.listen)
	}
	return proxy.NewAgentKeys(keys), nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// serve runs the sidecar: build, then run until ctx ends (SIGTERM, SIGINT)
// or a listener or loop fails.
func serve(ctx context.Context, cfg serveConfig, stderr io.Writer) error {
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	s, err := build(ctx, cfg, log)
	if err != nil {
		return err
	}
	return s.run(ctx)
}

// build makes everything the sidecar runs from its configuration: the
// store, the policy engine, the governor, the search index, the dialects'
// routes on two bound listeners, and the background loops, none started.
// When it fails it closes what it opened.
func build(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *daemon, err error) {
	s := &daemon{log: log, started: time.Now()}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	keys, err := agentKeys(cfg, os.Getenv, log)
	if err != nil {
		return nil, err
	}
	token, err := adminToken(cfg.dataDir, log)
	if err != nil {
		return nil, err
	}

	b, err := openBackend(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s.onClose(func() { // the last closer: every writer has stopped
		if err := b.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	met, err := metrics.New(reg, metrics.WithPolicyErrorReason(policy.ErrorReason))
	if err != nil {
		return nil, err
	}
	httpMet, err := metrics.NewHTTP(reg) // wraps both listeners below
	if err != nil {
		return nil, err
	}
	if err := metrics.RegisterBuildInfo(reg); err != nil {
		return nil, err
	}

	pol, err := openPolicy(ctx, cfg, log, met)
	if err != nil {
		return nil, err
	}
	s.onClose(pol.close)

	// Slack is on with a bot token; the outbox then takes every notice in
	// the transaction that causes it.
	var outbox *notify.Outbox
	var waker memory.Notified
	if cfg.slack.Enabled() {
		if err := cfg.slack.Validate(); err != nil {
			return nil, err
		}
		outbox = notify.NewOutbox(notify.OutboxOptions{Store: b.Store, Logger: log, Metrics: notify.NewMetrics(reg), Writable: b.Writable})
		waker = outbox
	}
	var judge memory.Judge // a model's second opinion, when --judge-url is set
	if cfg.judgeURL != "" {
		onResult, err := metrics.NewJudge(reg)
		if err != nil {
			return nil, err
		}
		j, err := memjudge.New(memjudge.Options{URL: cfg.judgeURL, Model: cfg.judgeModel, Timeout: cfg.judgeTimeout,
			APIKey: os.Getenv("MEMGATE_JUDGE_API_KEY"), Logger: log, OnResult: onResult})
		if err != nil {
			return nil, err
		}
		judge = j
		log.Info("judge on", "url", j.Endpoint(), "model", j.Model(), "timeout", cfg.judgeTimeout.String())
	}
	mode, err := memory.ParsePolicyMode(cfg.policyMode)
	if err != nil {
		return nil, fmt.Errorf("--policy-mode: %w", err)
	}
	if mode == memory.PolicyShadow {
		log.Warn("policy mode shadow: writes policy would park or reject are applied (secrets are still rejected) and listed by `sidecar review list --shadow`")
	}
	scanner, err := secrets.New()
	if err != nil {
		return nil, fmt.Errorf("secret scanner: %w", err)
	}
	// One index of the active layer that every dialect and the governor's
	// List read through: following Badger's commits, or scanning a store
	// without a commit feed on each read.
	embeddings, unfollowEmbeddings, err := openEmbeddings(cfg, b, reg, log)
	if err != nil {
		return nil, err
	}
	s.onClose(unfollowEmbeddings)
	var semantic search.Semantic
	if embeddings != nil {
		semantic = embeddings
		s.loops = append(s.loops, loop{"the embeddings worker", embeddings.Run})
	}
	index, err := search.Open(ctx, b.Search, search.Options{Semantic: semantic, Logger: log})
	if err != nil {
		return nil, err
	}
	s.onClose(index.Close)

	matcher, err := factMatcher(cfg, index, log)
	if err != nil {
		return nil, err
	}
	gov := memory.NewGovernor(memory.Options{Store: b.Store, Classifier: met.InstrumentClassifier(pol.classifier), Logger: log,
		PolicyTimeout: cfg.policyTimeout, Outbox: outbox != nil, Waker: waker, Observer: met, Judge: judge, Secrets: scanner,
		Active: index, PolicyMode: mode, Facts: matcher})
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: gov, Disk: b.Disk, Outbox: b.Store, Logger: log}))

	var markdownGuard *guard.Guard // /readyz reports its refusals
	agentMux := http.NewServeMux()
	(&proxy.Native{Gov: gov, Search: index, Log: log, Keys: keys}).Register(agentMux)
	var extractor mem0.Extractor
	if cfg.extractorURL != "" {
		ex, err := mem0.NewChatExtractor(mem0.ChatExtractorOptions{URL: cfg.extractorURL, Model: cfg.extractorModel,
			APIKey: os.Getenv(extractorKeyVar)})
		if err != nil {
			return nil, err
		}
		extractor = ex
	}
	// Mem0's event log, in the store's KV area: on a shared store every
	// instance sees each event.
	events := b.Events
	if events == nil {
		return nil, fmt.Errorf("the store %s cannot keep Mem0's event log: %T does not scan and count a KV namespace (storeapi.KVScanner)", b.Where, b.Store)
	}
	er := &eraser{gov: gov, kv: b.KV, events: events, compact: b.Compact, newID: memory.NewULIDSource(), log: log}
	if embeddings != nil {
		er.forget = embeddings.Forget
	}
	s.loops = append(s.loops, loop{"the unfinished erasures", func(ctx context.Context) error {
		if err := er.Resume(ctx); err != nil && ctx.Err() == nil {
			log.Error("an erasure a previous run began could not be finished; it is tried again at the next start", "err", err)
		}
		return nil
	}})
	var agentErase func(context.Context, memory.ErasureRequest) (memory.ErasureCounts, error)
	if cfg.mem0DeleteErases {
		agentErase = func(ctx context.Context, req memory.ErasureRequest) (memory.ErasureCounts, error) {
			a, err := er.Erase(ctx, req)
			if err != nil {
				return memory.ErasureCounts{}, err
			}
			return a.Counts, nil
		}
	}
	m0 := mem0.New(mem0.Options{Gov: gov, Events: events, Search: index, Logger: log,
		Keys: keys, Extractor: extractor, Erase: agentErase})
	m0.Register(agentMux)
	mcpSrv := memgatemcp.NewServer(gov, memgatemcp.Options{Logger: log, Mem0: m0, MaxSessions: cfg.mcpMaxSessions,
		MaxStreams: cfg.mcpMaxStreams, SessionTimeout: cfg.mcpSessionTimeout, Keys: keys,
		HostChecked: true}) // RefuseBrowsers below checks Host on every route, /mcp included
	mcpSrv.Register(agentMux) // Streamable HTTP at /mcp
	if cfg.retentionInterval > 0 {
		rm, err := metrics.NewRetention(reg)
		if err != nil {
			return nil, err
		}
		rules := func() memory.Retention { return memory.Retention{} }
		if rp, ok := pol.classifier.(interface{ Retention() memory.Retention }); ok {
			rules = rp.Retention
		}
		rw := &retentionWorker{gov: gov, rules: rules, interval: cfg.retentionInterval, batch: max(cfg.retentionBatch, 1), metrics: rm, log: log}
		s.loops = append(s.loops, loop{"the retention pass", rw.Run})
	}
	adminMux := http.NewServeMux()
	(&proxy.Admin{Gov: gov, Log: log, Token: token, Replay: replayPolicy(gov), Snapshot: b.Snapshot, Audit: b.Audit,
		Erase: func(ctx context.Context, req memory.ErasureRequest) (any, error) { return er.Erase(ctx, req) },
		Ready: func(context.Context) error {
			if !s.ready.Load() {
				return errors.New("starting")
			}
			if err := b.notReady(); err != nil {
				return err
			}
			if markdownGuard != nil {
				return markdownGuard.Degraded() // a guarded file refused: governed no more until it is fixed
			}
			return nil
		}}).Register(adminMux)

	adminMux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if outbox != nil {
		// OnReady: once the Slack check passes (at start, or after an invite),
		// notices that waited for it go out without waiting out their backoff.
		sl, err := slacknotify.New(cfg.slack, slacknotify.Deps{Gov: gov, KV: b.KV, Logger: log, Registerer: reg,
			OnReady: outbox.RetryNow})
		if err != nil {
			return nil, err
		}
		adminMux.Handle("POST /slack/interactions", sl.Handler()) // Slack signs; no bearer token
		rem := notify.NewReminder(notify.ReminderOptions{Store: b.Store, KV: b.KV, After: cfg.slack.RemindAfter, Waker: outbox, Logger: log})
		notifier := rem.Once(sl) // each reminder round goes out once, whichever instance queued it
		s.loops = append(s.loops,
			loop{"the notification outbox", func(ctx context.Context) error { return outbox.Run(ctx, notifier) }},
			loop{"the reminder", rem.Run},
			loop{"the Slack loop", sl.Run})
		log.Info("slack review loop on", "channel", cfg.slack.Channel, "socketMode", cfg.slack.AppToken != "")
	}

	// Only JSON, only from agents: browser pages, rebound Host names and
	// non-JSON writes are refused on both listeners.
	browsers := proxy.BrowserPolicy{AllowedHosts: commaList(cfg.allowedHosts), AllowedOrigins: commaList(cfg.allowedOrigins)}
	agentPolicy, adminPolicy := browsers, browsers
	agentPolicy.RPCPaths = []string{"/mcp"}                   // JSON-RPC refusals, strict pre-scan of MCP bodies
	adminPolicy.SignedPaths = []string{"/slack/interactions"} // form-encoded, signed by Slack
	agentSrv := newServer(httpMet.Instrument("agent", agentMux, proxy.RefuseBrowsers(proxy.JSONRoutes(agentMux), agentPolicy)), log)
	agentSrv.RegisterOnShutdown(mcpSrv.Close) // open MCP streams must not hold up Shutdown
	adminSrv := newServer(httpMet.Instrument("admin", adminMux, proxy.RefuseBrowsers(proxy.JSONRoutes(adminMux), adminPolicy)), log)
	agentLn, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("agent listener: %w", err)
	}
	s.onClose(func() { agentLn.Close() }) // Serve closed it already, unless build failed
	adminLn, err := net.Listen("tcp", cfg.adminListen)
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	s.onClose(func() { adminLn.Close() })
	s.listeners = []listener{{"agent listener", agentSrv, agentLn}, {"admin listener", adminSrv, adminLn}}
	if cfg.debugListen != "" {
		dl, err := debugListener(cfg.debugListen, log)
		if err != nil {
			return nil, err
		}
		s.onClose(func() { dl.ln.Close() })
		s.listeners = append(s.listeners, dl)
	}

	if len(cfg.guardDirs) > 0 {
		gm, err := guard.NewMetrics(reg)
		if err != nil {
			return nil, err
		}
		if cfg.guardMaxFileBytes <= 0 || cfg.guardMaxEntries <= 0 {
			return nil, errors.New("--guard-max-file-bytes and --guard-max-entries must be positive")
		}
		// Made last: its Run releases the directories New opens.
		gd, err := guard.New(guard.Options{Gov: gov, KV: b.KV, Dirs: cfg.guardDirs, Globs: cfg.guardGlobs,
			Subject: cfg.guardSubject, Logger: log, Metrics: gm, MaxFileBytes: cfg.guardMaxFileBytes, MaxEntries: cfg.guardMaxEntries})
		if err != nil {
			return nil, err
		}
		markdownGuard = gd
		s.loops = append(s.loops, loop{"the Markdown guard", gd.Run})
	}
	s.readyLog = []any{"agent", agentLn.Addr().String(), "admin", adminLn.Addr().String(),
		"data", cfg.dataDir, "store", b.Where, "durability", durability(cfg), "policy", pol.describe}
	return s, nil
}

func newServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// adminToken returns MEMGATE_ADMIN_TOKEN, or the token generated into the
// data directory on first start.
func adminToken(dataDir string, log *slog.Logger) (string, error) {
	path := filepath.Join(dataDir, tokenFile)
	if t := strings.TrimSpace(os.Getenv("MEMGATE_ADMIN_TOKEN")); t != "" {
		log.Info("admin token from MEMGATE_ADMIN_TOKEN")
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != t {
			// The CLI reads this file when MEMGATE_ADMIN_TOKEN is not exported to it.
			log.Warn("the token file in the data directory is not in use: CLI calls without MEMGATE_ADMIN_TOKEN will be refused", "path", path)
		}
		return t, nil
	}
	return secretFile(path, "admin token", log)
}

// secretFile returns the secret held in path, or generates one into it
// (readable by memgate's user only) and says where: the admin token and
// the container's agent key. The secret itself is never logged.
func secretFile(path, what string, log *slog.Logger) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		log.Info(what+" read from the data directory", "path", path)
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	secret := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	log.Info(what+" generated", "path", path)
	return secret, nil
}

// Files memgate generates into the data directory.
const (
	tokenFile    = "admin.token"
	agentKeyFile = "agent.key"
)

// durability names how commits reach the disk, for the startup log.
func durability(cfg serveConfig) string {
	switch {
	case cfg.store != "":
		return "database"
	case cfg.noSync:
		return "no-sync"
	case cfg.groupCommit:
		return "group-commit"
	}
	return "fsync-per-commit"
}

// loopback reports whether a listen address binds only the loopback interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// policyHandle is the policy engine as the sidecar wires it.
type policyHandle struct {
	classifier memory.Classifier
	describe   string
	close      func()
}

// commaList splits a comma-separated flag value, dropping empty entries.
func commaList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// extractorKeyVar carries the key of --extractor-url.
const extractorKeyVar = "MEMGATE_EXTRACTOR_API_KEY"

// factMatcher is what finds the active memory a free-text write repeats or
// updates: the comparison over the search index, and with --extractor-url
// (unless --extractor-relate=false) the extractor's model too, for the
// facts it extracted (facts.ModelMatcher).
func factMatcher(cfg serveConfig, index *search.Index, log *slog.Logger) (memory.FactMatcher, error) {
	lexical := &facts.Matcher{Index: index}
	if cfg.extractorURL == "" || !cfg.extractorRelate {
		return lexical, nil
	}
	rel, err := relate.New(relate.Options{URL: cfg.extractorURL, Model: cfg.extractorModel,
		APIKey: os.Getenv(extractorKeyVar), Timeout: cfg.relateTimeout, KeyVar: extractorKeyVar})
	if err != nil {
		return nil, fmt.Errorf("--extractor-url: %w", err)
	}
	log.Info("extracted facts are related to their memories by the extractor's model", "url", rel.Endpoint(),
		"model", cfg.extractorModel, "timeout", cfg.relateTimeout.String())
	return &facts.ModelMatcher{Lexical: lexical, Model: rel, Asks: mem0.ModelFact, Logger: log}, nil
}

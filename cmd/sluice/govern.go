package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/policy/redisstore"
	"github.com/sluicehq/sluice/policy/sqlitestore"
	"github.com/sluicehq/sluice/telemetry"
)

// governance is everything behind the decision point, built once from the
// config for `serve` and `wrap` alike: policy (hot-reloaded), classifier,
// inventory, approvals, telemetry and the audit store.
type governance struct {
	ic *intercept.Interceptor
	// lifecycle gives each session's classifier its own identity; end
	// sessions with lifecycle.Revoke.
	lifecycle *classifier.Lifecycle
	inv       *inventory.Inventory
	approvals *approval.Store
	tp        *telemetry.Provider
	rec       *recorder
	// memory is the route memory, told when a session ends so its
	// session-scoped memories go (nil: it cannot forget, as Redis's
	// expire by TTL).
	memory policy.SessionForgetter
	// recommend serves the recommendation engine on the admin listener;
	// nil without an audit store.
	recommend *recommender
	closers   []func(context.Context)
	// lastSnapshot is the inventory snapshot inventorySnapshot built last.
	lastSnapshot atomic.Pointer[classifier.InventorySnapshot]
}

// buildGovernance builds the decision chain: audit gate ← approval hold ←
// inventory drift ← classifier advice ← deterministic policy.
func buildGovernance(ctx context.Context, cfg *config, logger *slog.Logger) (gv *governance, err error) {
	built := &governance{}
	gv = built
	defer func() {
		if err != nil {
			built.close(context.Background()) // gv is nil on the error returns
		}
	}()
	var mem policy.Store
	local := policy.NewMemoryStore(policy.MemoryOptions{})
	if rm := cfg.RouteMemory; rm.RedisURL != "" {
		redis.SetLogger(redisLog{logger}) // its connection-pool chatter, through the gateway's log
		opts := redisstore.Options{URL: rm.RedisURL, KeyPrefix: rm.KeyPrefix, TTL: rm.TTL, Timeout: rm.Timeout}
		if cfg.DataDir != "" {
			// So that a Redis that lost its data while no gateway ran is
			// noticed at start. Made now: on a first start nothing else
			// has made it yet, and the epoch must be noted.
			dir, err := cfg.dataDir()
			if err != nil {
				return nil, err
			}
			opts.EpochFile = filepath.Join(dir, redisstore.EpochFileName)
			opts.OnEpochFileError = func(err error) {
				logger.Error("route memory: Redis lost its data and the note of it could not be written; the next start will refuse until it can", "err", err)
			}
		}
		rs, err := redisstore.New(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("route_memory.redis_url: %w", err) // named as the other Redis keys are
		}
		gv.closers = append(gv.closers, func(context.Context) { _ = rs.Close() })
		mem, local = rs, nil
	} else if cfg.routeMemoryFile {
		// The data directory, set or the default: wraps on the default
		// one share their memory too.
		dir, err := cfg.dataDir()
		if err != nil {
			return nil, err
		}
		fs, err := sqlitestore.Open(filepath.Join(dir, sqlitestore.FileName), rm.TTL)
		if err != nil {
			return nil, err
		}
		gv.closers = append(gv.closers, func(context.Context) { _ = fs.Close() })
		mem, local = fs, nil
	} else {
		mem = local
		gv.memory = local
	}
	dec, runPolicy, err := cfg.decider(logger, mem)
	if err != nil {
		return nil, err
	}
	pctx, stopPolicy := context.WithCancel(ctx)
	gv.closers = append(gv.closers, func(context.Context) { stopPolicy() })
	go runPolicy(pctx)

	dir, err := cfg.dataDir()
	if err != nil {
		return nil, err
	}
	if err := cfg.Telemetry.Validate(); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	tc := cfg.Telemetry
	tc.Logger = logger // spans dropped for a collector that does not keep up
	if gv.tp, err = telemetry.New(ctx, tc); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	tp := gv.tp
	gv.closers = append(gv.closers, func(context.Context) {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	})
	if local != nil {
		go reportMemory(pctx, local, tp.Metrics())
	}
	rec := &recorder{redact: cfg.Audit.Redactor, metrics: tp.Metrics(), log: logger, proxies: cfg.trustedProxies}
	gv.rec = rec
	if !cfg.Audit.Off {
		path := filepath.Join(dir, audit.FileName)
		loss := &lossReport{log: logger, metrics: tp.Metrics(), deny: cfg.Audit.OnFailure == auditDeny, path: path}
		store, err := audit.Open(path, audit.Options{Depth: tp.Metrics(), Retention: cfg.Audit.Retention,
			Sync: cfg.Audit.Sync == auditCommit, OnHealth: loss.health, OnLost: loss.lost,
			OnPrune: func(n int64, err error) {
				if err != nil {
					logger.Error("audit: deleting events past the retention", "err", err)
					return
				}
				logger.Info("audit: deleted events past the retention", "events", n, "retention", cfg.Audit.Retention)
			}})
		if err != nil {
			return nil, err // audit.Open's errors name the store and its file
		}
		gv.closers = append(gv.closers, func(ctx context.Context) {
			if err := store.Shutdown(ctx); err != nil {
				logger.Error("audit: closing the event store", "err", err)
			}
		})
		rec.store = store
	}
	ibe, err := cfg.Inventory.backend(ctx)
	if err != nil {
		return nil, err
	}
	iopts := inventory.Options{
		Dir: dir, KeyFile: cfg.Inventory.KeyFile, Pinning: cfg.Inventory.Pinning, OnDrift: cfg.Inventory.OnDrift,
		MaxDescription: cfg.Inventory.MaxDescription, OnPoisonedListing: cfg.Inventory.OnPoisonedListing,
		AllowedListings: cfg.Inventory.AllowedListings,
		ReadName:        policy.NormalName, // a withheld resource under any spelling policy reads as its URI
		Events: inventory.EventFunc(func(e inventory.Event) {
			logInventory(logger, e)
			rec.inventory(e)
		}),
	}
	if ibe != nil {
		iopts.Backend = ibe
		gv.closers = append(gv.closers, func(context.Context) { _ = ibe.Close() })
	}
	gv.inv, err = inventory.New(iopts)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	go gv.inv.Watch(pctx) // applies the other replicas' pins and approvals
	// Approvals live in the data directory: a restarted gateway, or another
	// process on the same directory (several `sluice wrap`), can answer
	// them; or in Redis, where every replica can.
	// An agent may keep a tenth of MaxLiveBytes held: at least one call
	// of the largest size max_body_bytes lets in.
	maxHeld := max(approval.MaxLiveBytes, 10*cmp.Or(cfg.MaxBodyBytes, gateway.DefaultMaxBodyBytes))
	aopts := approval.Options{Timeout: cfg.Approvals.Timeout, AgentClaims: agentClaims(cfg), MaxLiveBytes: maxHeld, SecretKeys: cfg.Audit.SecretKeys, OnChange: func(r approval.Request) {
		logger.Info("approval", "id", r.ID, "status", r.Status, "tool", telemetry.ToolName(r.Tool), "agent", telemetry.BoundName(r.Agent), "txn_id", r.TxnID, "by", telemetry.BoundName(r.DecidedBy))
		rec.approval(r)
	}}
	const unavailable = "approvals: the approvals store cannot be read or written; calls that need approval are denied (policy_error) and decisions refused (503) until it can"
	const answers = "approvals: the approvals store answers again"
	if u := cfg.Approvals.RedisURL; u != "" {
		client, err := dialRedis(ctx, "approvals.redis_url", u)
		if err != nil {
			return nil, err
		}
		f := &storeFailures{log: logger, msg: unavailable, again: answers, attrs: []any{"store", "redis"}}
		aopts.OnUnavailable, aopts.OnAvailable = f.failed, f.answered
		gv.approvals, err = approval.OpenRedisStore(ctx, client, cfg.Approvals.KeyPrefix, aopts)
	} else {
		path := filepath.Join(dir, approval.FileName)
		f := &storeFailures{log: logger, msg: unavailable, again: answers, attrs: []any{"path", path}}
		aopts.OnUnavailable, aopts.OnAvailable = f.failed, f.answered
		gv.approvals, err = approval.OpenStore(path, aopts)
	}
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	approvals := gv.approvals
	gv.closers = append(gv.closers, func(context.Context) { _ = approvals.Close() })
	go gv.approvals.Run(pctx) // releases requests nobody answers
	// The classifier reads a tool's classes from the policy's tool_classes
	// (for action type, after declared values and annotations).
	if cl, ok := dec.(interface {
		Classes(upstream, tool string) []string
	}); ok && cfg.Classifier.Classes == nil {
		cfg.Classifier.Classes = cl.Classes
	}
	adv, err := cfg.advisor(pctx, logger, gv.inventorySnapshot, rec.breaker)
	if err != nil {
		return nil, err
	}
	adv.Policy = dec
	adv.Tracer = tp.Tracer()
	inv := gv.inv
	adv.ToolPoisoning = func(upstream, tool string) []string {
		var rules []string
		for _, f := range inv.RiskFactors(upstream, tool) {
			if !slices.Contains(rules, f.Rule) {
				rules = append(rules, f.Rule)
			}
		}
		return rules
	}
	if adv.Classifier != nil {
		gv.lifecycle = &classifier.Lifecycle{OnEvent: func(e classifier.LifecycleEvent) {
			logger.Debug("classifier lifecycle", "event", e.Type, "session", e.SessionID, "classifier_id", e.ClassifierID)
			rec.lifecycle(e, cfg.Classifier.Provider, cfg.Classifier.Profile)
		}}
		adv.Classifier = gv.lifecycle.Wrap(adv.Classifier)
	}
	logAdvice := adv.OnAdvice
	provider := cfg.Classifier.Provider
	if provider == "" {
		provider = "builtin"
	}
	adv.OnAdvice = func(a *govern.Advice) {
		if logAdvice != nil {
			logAdvice(a)
		}
		rec.advice(a, provider, cfg.Classifier.Profile)
	}
	var onResult func(*intercept.ActionDescriptor, jsontext.Value)
	var withholdResult func(*intercept.ActionDescriptor, string, jsontext.Value) string
	if cfg.Classifier.scansResults() {
		withhold := cfg.Classifier.OnResultInjection == resultWithhold
		warns := &perUpstreamWarnings{}
		found := func(d *intercept.ActionDescriptor, fs []classifier.InjectionFinding, withheld bool) {
			if log, suppressed := warns.allow(d.Upstream, time.Now()); log {
				logger.Warn("a result looks like a prompt injection", "txn_id", d.TxnID, "upstream", d.Upstream, "tool", telemetry.ToolName(d.ToolName),
					"findings", len(fs), "withheld", withheld, "not_logged_since", suppressed)
			}
			rec.resultInjection(d, fs, withheld)
		}
		onResult = func(d *intercept.ActionDescriptor, result jsontext.Value) {
			// With withhold, an action's answer is screened before the
			// client has it, by withholdResult, and does not get here.
			if fs := classifier.DetectInjectionInResult(result); len(fs) > 0 {
				found(d, fs, false)
			}
		}
		if withhold {
			withholdResult = func(d *intercept.ActionDescriptor, method string, answer jsontext.Value) string {
				fs := classifier.DetectInjectionInResult(answer)
				if len(fs) > 0 {
					found(d, fs, true)
				}
				return withheldBecause(method, fs)
			}
		}
	}
	var decider intercept.Decider = &approval.Gate{Next: &govern.DriftGate{Next: adv, Inventory: gv.inv}, Store: gv.approvals}
	if rules, _ := cfg.RateLimits.rules(); len(rules) > 0 { // checked when the config was loaded
		lim, closeLim, err := cfg.RateLimits.limiter(ctx)
		if err != nil {
			return nil, err
		}
		gv.closers = append(gv.closers, func(context.Context) { closeLim() })
		decider = &govern.RateGate{Next: decider, Rules: rules, Limiter: lim}
	}
	if rec.store != nil {
		gate := &govern.AuditGate{Next: decider, Err: rec.store.Err, Deny: cfg.Audit.OnFailure == auditDeny}
		if cfg.Audit.Sync == auditCommit {
			gate.Record = rec.forwarded
		}
		decider = gate
	}
	gv.ic = &intercept.Interceptor{
		OnResult:        onResult,
		WithholdResult:  withholdResult,
		Decider:         decider,
		Declared:        cfg.declared(),
		Observer:        gv.inv,
		HideDeniedTools: cfg.HideDeniedTools == nil || *cfg.HideDeniedTools,
		OnDecision: func(d *intercept.ActionDescriptor, dc intercept.Decision) {
			level := slog.LevelDebug // allows are routine; denials and holds are news
			if dc.Verdict != intercept.Allow {
				level = slog.LevelInfo
			}
			if logger.Enabled(context.Background(), level) { // the attributes cost allocations even unlogged
				logger.Log(context.Background(), level, "decision", "txn_id", d.TxnID, "upstream", d.Upstream, "tool", telemetry.ToolName(d.ToolName), "agent", telemetry.BoundName(d.Agent),
					"session", d.SessionID, "decision", dc.Verdict, "reason", dc.Reason, "rule", dc.RuleID)
			}
			rec.decision(d, dc, 0)
		},
	}
	return gv, nil
}

// inventorySnapshot is what an LLM classifier's prompt lists: every tool
// last seen on every upstream. The classifier asks for it at every call:
// while no upstream's tools change it is the one built last (lastSnapshot),
// not a copy of every tool of every upstream each time.
func (gv *governance) inventorySnapshot() classifier.InventorySnapshot {
	var hash strings.Builder
	var snaps []*inventory.Snapshot
	var names []string
	for _, u := range gv.inv.Upstreams() {
		s := gv.inv.Snapshot(u, inventory.Observed)
		if s == nil {
			continue
		}
		if hash.Len() > 0 {
			hash.WriteByte(',')
		}
		// The prompt names each tool's upstream: so does the hash.
		hash.WriteString(u + ":" + s.Hash)
		snaps, names = append(snaps, s), append(names, u)
	}
	if last := gv.lastSnapshot.Load(); last != nil && last.Hash == hash.String() {
		return *last
	}
	snap := classifier.InventorySnapshot{Hash: hash.String()}
	for i, s := range snaps {
		for _, t := range s.Tools {
			snap.Tools = append(snap.Tools, classifier.InventoryTool{Upstream: names[i], Name: t.Name, Description: t.Description})
		}
	}
	gv.lastSnapshot.Store(&snap)
	return snap
}

// sessionEnded revokes the ended session's classifier identity and drops
// its session-scoped route memory (agent-scoped memory stays).
func (gv *governance) sessionEnded(id string) {
	if gv.lifecycle != nil {
		gv.lifecycle.Revoke(id)
	}
	if gv.memory != nil {
		gv.memory.ForgetSession(id)
	}
}

// admin is the admin API: approvals, inventory and /metrics.
func (gv *governance) admin() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/admin/approvals", gv.approvals.Handler(""))
	mux.Handle("/admin/approvals/", gv.approvals.Handler(""))
	mux.Handle("/admin/inventory", inventoryAdmin(gv.inv))
	mux.Handle("/admin/inventory/", inventoryAdmin(gv.inv))
	mux.Handle("/metrics", gv.tp.MetricsHandler())
	if gv.recommend != nil {
		mux.Handle("/admin/recommendations", gv.recommend.handler())
		mux.Handle("/admin/recommendations/", gv.recommend.handler())
	}
	return mux
}

// close releases everything in reverse order of creation; the audit store
// writes what is queued until ctx ends, and then gives it up (logged): a
// database another process holds locked, or a disk that stalls, does not
// keep the process from exiting.
func (gv *governance) close(ctx context.Context) {
	for i := len(gv.closers) - 1; i >= 0; i-- {
		gv.closers[i](ctx)
	}
	gv.closers = nil
}

// redisLog passes go-redis's own log lines to the gateway's logger.
type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, "route memory: redis: "+fmt.Sprintf(format, v...))
}

// memoryReportInterval is how often the route memory's size and evictions
// are handed to the metrics.
const memoryReportInterval = time.Second

// reportMemory hands the route memory's size and evictions to m until ctx
// ends.
func reportMemory(ctx context.Context, mem *policy.MemoryStore, m telemetry.Metrics) {
	t := time.NewTicker(memoryReportInterval)
	defer t.Stop()
	for {
		m.MemoryStore(mem.Len(), mem.Evictions())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// logInventory logs an inventory event at the level of its news: a pin
// or an approval is routine (INFO), drift and findings need a look
// (WARN), a rejected snapshot or a failed save is broken (ERROR). A
// poisoning finding names its rule and severity.
func logInventory(logger *slog.Logger, e inventory.Event) {
	level := slog.LevelWarn
	switch e.Type {
	case inventory.EventPinned, inventory.EventApproved:
		level = slog.LevelInfo
	case inventory.EventSnapshotRejected, inventory.EventStoreError:
		level = slog.LevelError
	}
	attrs := []any{"event", e.Type, "upstream", e.Upstream, "tool", telemetry.ToolName(e.Tool)}
	for _, k := range []string{"rule", "severity", "field", "change", "blocked", "hash", "tools", "restored", "error"} {
		if v, ok := e.Detail[k]; ok {
			attrs = append(attrs, k, v)
		}
	}
	logger.Log(context.Background(), level, "inventory", attrs...)
}

// declared is what the classifier section declares about each tool
// (classifier.tools, and upstreams' zones for the boundary), for the
// descriptors policy reads: a manifest's boundary_ceiling compares it,
// and RESTRICT_BOUNDARY reads it from policy_enforced events. Nil when
// nothing is declared.
func (c *config) declared() func(upstream, tool string) (string, string, string) {
	o := c.Classifier.Options
	for _, u := range o.Upstreams {
		if u.Zone != "" {
			return o.Declared
		}
	}
	if len(o.Tools) > 0 {
		return o.Declared
	}
	return nil
}

// perUpstreamWarnings bounds a warning logged about what upstreams send:
// one a second per upstream, the next saying how many were not logged
// since. An upstream that floods flagged progress notifications, each
// withheld and recorded as an event, does not flood the log too.
type perUpstreamWarnings struct {
	mu   sync.Mutex
	last map[string]upstreamWarning
}

type upstreamWarning struct {
	at         time.Time
	suppressed int
}

// allow reports whether a warning about upstream may be logged at now,
// and how many were not since the last one logged.
func (w *perUpstreamWarnings) allow(upstream string, now time.Time) (bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]upstreamWarning{}
	}
	l := w.last[upstream]
	if !l.at.IsZero() && now.Sub(l.at) < time.Second {
		l.suppressed++
		w.last[upstream] = l
		return false, 0
	}
	w.last[upstream] = upstreamWarning{at: now}
	return true, l.suppressed
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/internal/throttle"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/telemetry"
)

// recorder turns what the gateway decides and sees into correlated events
// (same txn_id) in the audit store, and into metrics. Appends wait when the
// store's queue is full: events are never dropped.
type recorder struct {
	store   *audit.Store
	redact  telemetry.Redactor
	metrics telemetry.Metrics
	log     *slog.Logger
	proxies []netip.Prefix // trusted_proxies: whose X-Forwarded-For names the client

	// recorded holds the descriptors of allowed calls whose event
	// forwarded wrote (sync: commit), so that decision does not write it
	// again; decision removes them.
	recorded           sync.Map
	authSec, authCount atomic.Int64 // the second and the count of authFailure events in it
	idSec, idCount     atomic.Int64 // the second and the count of identityRefused events in it
}

func (r *recorder) append(ev telemetry.Event) {
	if r.store == nil {
		return
	}
	if err := r.store.Append(context.Background(), ev); err != nil {
		r.failed(ev.Type, ev.TxnID, err)
	}
}

// record appends an event of every call, encoded by its builder.
func (r *recorder) record(rec telemetry.Record) {
	if err := r.store.AppendRecord(context.Background(), rec); err != nil {
		h := rec.Header()
		r.failed(h.Type, h.TxnID, err)
	}
}

// failed logs an event that was not stored, unless the store is failing:
// its losses are then logged and counted by lossReport, without a line per
// event.
func (r *recorder) failed(typ, txn string, err error) {
	if r.store.Err() == nil {
		r.log.Error("audit: event not stored", "type", typ, "txn_id", txn, "err", err)
	}
}

// forwarded writes the policy_enforced event of an allowed call and waits
// until it is durable, before the call is forwarded (audit.sync: commit;
// govern.AuditGate.Record).
func (r *recorder) forwarded(ctx context.Context, d *intercept.ActionDescriptor, dc intercept.Decision) error {
	pe := enforcements.Get().(*telemetry.PolicyEnforcement)
	defer putEnforcement(pe)
	*pe = r.enforcement(d, dc, 0)
	if err := r.store.AppendRecord(ctx, pe); err != nil {
		r.failed(telemetry.TypePolicyEnforced, d.TxnID, err)
		return err
	}
	r.recorded.Store(d, struct{}{})
	return nil
}

func (r *recorder) decision(d *intercept.ActionDescriptor, dc intercept.Decision, latency time.Duration) {
	r.metrics.Decision(string(dc.Verdict), dc.Reason, latency)
	if r.store == nil {
		return // audit.off: nobody to build the event for
	}
	if _, done := r.recorded.LoadAndDelete(d); done && dc.Verdict == intercept.Allow {
		return
	}
	pe := enforcements.Get().(*telemetry.PolicyEnforcement)
	*pe = r.enforcement(d, dc, latency)
	r.record(pe)
	putEnforcement(pe)
}

// The events of every call are built in pooled structs: the store encodes
// a record before AppendRecord returns and keeps nothing of it, and a
// struct put in an interface would otherwise be copied to the heap.
var (
	enforcements    = sync.Pool{New: func() any { return new(telemetry.PolicyEnforcement) }}
	classifications = sync.Pool{New: func() any {
		return &telemetry.IntentClassification{Axes: make(map[string]telemetry.AxisClassification, 5)}
	}}
)

func putEnforcement(pe *telemetry.PolicyEnforcement) {
	*pe = telemetry.PolicyEnforcement{}
	enforcements.Put(pe)
}

// enforcement is the policy_enforced event of decision dc about d.
func (r *recorder) enforcement(d *intercept.ActionDescriptor, dc intercept.Decision, latency time.Duration) telemetry.PolicyEnforcement {
	return telemetry.PolicyEnforcement{
		Time: time.Now(), TxnID: d.TxnID, Agent: d.Agent, Session: d.SessionID, Upstream: d.Upstream, Tool: d.ToolName,
		CallID: string(d.CallID), Decision: string(dc.Verdict), Reason: dc.Reason, PublicReason: dc.PublicReason,
		ResultMode: string(dc.Mode), PolicyVersion: dc.PolicyVersion, RuleID: dc.RuleID, ApprovalID: dc.ApprovalID,
		Evidence: telemetry.Evidence{MatchedToolName: dc.Evidence.MatchedToolName, MatchedToolClasses: dc.Evidence.MatchedToolClasses,
			MatchedRouteRuleID: dc.Evidence.MatchedRouteRuleID, ReasonCode: dc.Evidence.ReasonCode},
		Latency: latency, ToolInventoryHash: d.ToolInventoryHash, TargetEndpoint: d.TargetEndpoint,
		CapabilityClassDeclared: d.CapabilityClassDeclared, ActionTypeDeclared: d.ActionTypeDeclared, BoundaryDeclared: d.BoundaryDeclared,
		ProtocolVersion: d.ProtocolVersion, Arguments: r.redact.Arguments(d.Parameters),
		AuthMethod: authMethod(d), ClientName: d.ClientName,
	}
}

// lossReportEvery spaces the ERROR lines about lost events while the
// audit store keeps failing; the metric counts every loss at once.
const lossReportEvery = 10 * time.Second

// lossReport logs and counts what the audit store could not write. Its
// methods run on the store's writer goroutine, one at a time.
type lossReport struct {
	log     *slog.Logger
	metrics telemetry.Metrics
	deny    bool   // audit.on_failure: deny
	path    string // the event database, named in the ERROR lines

	unlogged int       // lost events not yet in a log line
	logged   time.Time // of the last line about losses
}

func (l *lossReport) health(err error) {
	l.metrics.AuditAvailable(err == nil)
	switch {
	case err != nil && l.deny:
		l.log.Error("audit: events cannot be written; calls are refused (audit_unavailable) until they can", "err", err, "path", l.path)
	case err != nil:
		l.log.Error("audit: events cannot be written; calls go on unrecorded (audit.on_failure: warn)", "err", err, "path", l.path)
	default:
		l.log.Info("audit: events are written again", "lost", l.unlogged)
		l.unlogged = 0
	}
}

func (l *lossReport) lost(n int, err error) {
	l.metrics.AuditLost(n)
	l.unlogged += n
	if now := time.Now(); now.Sub(l.logged) >= lossReportEvery {
		l.log.Error("audit: events lost", "events", l.unlogged, "err", err)
		l.unlogged, l.logged = 0, now
	}
}

// storeFailures logs the errors of a store a call's decision needs (the
// approvals store: its file's disk full, its Redis down) at ERROR: the
// first at once, then at most one line every lossReportEvery counting
// those between, so a store failing every call does not flood the log.
// When the store answers again it says so once at INFO, with the count of
// failures since it last answered, so the operator knows the outage ended.
// Safe for concurrent use.
type storeFailures struct {
	log *slog.Logger
	msg string
	// again is the INFO line's message when the store answers again.
	again string
	// attrs are logged with every line, after the count and the error.
	attrs []any

	mu       sync.Mutex // guards the fields below
	unlogged int        // failures not yet in a log line
	failures int        // failures since the store last answered
	logged   time.Time  // of the last line
}

func (f *storeFailures) failed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unlogged++
	f.failures++
	if now := time.Now(); now.Sub(f.logged) >= lossReportEvery {
		f.log.Error(f.msg, append([]any{"failures", f.unlogged, "err", err}, f.attrs...)...)
		f.unlogged, f.logged = 0, now
	}
}

// answered is told that the store answered after failing.
func (f *storeFailures) answered() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures == 0 {
		return
	}
	f.log.Info(f.again, append([]any{"failures", f.failures}, f.attrs...)...)
	// The next failure is a new outage: logged at once.
	f.failures, f.unlogged, f.logged = 0, 0, time.Time{}
}

func authMethod(d *intercept.ActionDescriptor) string {
	if d.Principal == nil {
		return ""
	}
	return d.Principal.Method
}

// authFailure records a request the authentication middleware refused,
// at most authEventsPerSecond a second: a flood of bad tokens must not
// fill the audit queue that decisions wait on. The rest are counted in a
// log line.
func (r *recorder) authFailure(req *http.Request, f *auth.Failure) {
	now := time.Now().Unix()
	if sec := r.authSec.Load(); sec != now && r.authSec.CompareAndSwap(sec, now) {
		if n := r.authCount.Swap(0); n > authEventsPerSecond {
			r.log.Warn("authentication failures not recorded as events (over the per-second cap)", "count", n-authEventsPerSecond)
		}
	}
	if r.authCount.Add(1) > authEventsPerSecond {
		return
	}
	// Through a trusted proxy, the client it forwards for (the proxy is
	// every client's peer there).
	client := throttle.Forwarded(req.RemoteAddr, req.Header.Values("X-Forwarded-For"), r.proxies)
	r.log.Info("request refused: authentication failed", "path", req.URL.Path, "client", client, "status", f.Status, "error", f.Code, "reason", f.Desc)
	r.append(telemetry.Event{Type: "sluice.auth_failure", Time: time.Now(), Attrs: map[string]any{
		"status": f.Status, "error": f.Code, "method": f.Method, "reason": f.Desc, "path": req.URL.Path, "client": client,
	}})
}

// authEventsPerSecond caps the sluice.auth_failure events of a second.
const authEventsPerSecond = 50

func (r *recorder) advice(a *govern.Advice, provider string, profile classifier.Profile) {
	d, v := a.Descriptor, a.Verdict
	r.metrics.Classification(a.Latency)
	var obe *classifier.OverBudgetError
	if a.Err != nil && errors.As(a.Err, &obe) {
		if m, ok := r.metrics.(interface{ ClassifierOverBudget(scope string) }); ok {
			m.ClassifierOverBudget(obe.Scope)
		}
	}
	if r.store == nil {
		return
	}
	ic := classifications.Get().(*telemetry.IntentClassification)
	axes := ic.Axes
	defer func() {
		clear(axes)
		*ic = telemetry.IntentClassification{Axes: axes}
		classifications.Put(ic)
	}()
	for name, av := range v.Axes.All() {
		axes[name] = telemetry.AxisClassification{Classified: av.Classified, Confidence: av.Confidence, Source: av.Source, ConservativeDefaultApplied: av.ConservativeDefaultApplied}
	}
	*ic = telemetry.IntentClassification{
		Time: time.Now(), TxnID: d.TxnID, Agent: d.Agent, Session: d.SessionID, Upstream: d.Upstream, Tool: d.ToolName,
		ClassifierID: v.ClassifierID, CapabilityClassDeclared: d.CapabilityClassDeclared, CapabilityClassVerdict: v.CapabilityClassVerdict,
		CapabilityClassConfidence: v.CapabilityClassConfidence, ConsistentWithDeclaration: v.ConsistentWithDeclaration,
		CompositeConfidence: a.Assessment.Composite, Axes: axes, ActiveProfile: string(profile), Provider: provider,
		ClassifiedAt: v.ClassifiedAt, Latency: a.Latency, RiskLevel: string(a.Intent.RiskLevel), RiskFactors: a.Intent.RiskFactors,
	}
	if a.Err != nil {
		ic.Error = a.Err.Error()
	}
	r.record(ic)
	for _, why := range a.Assessment.Mismatch {
		reason := telemetry.MismatchCapability
		if why == classifier.ReasonLowConfidence {
			reason = telemetry.MismatchLowConfidence
		}
		r.append(telemetry.IntentMismatch{Time: time.Now(), TxnID: d.TxnID, Agent: d.Agent, Session: d.SessionID, Upstream: d.Upstream,
			Tool: d.ToolName, Reason: reason, Declared: d.CapabilityClassDeclared, Classified: v.CapabilityClassVerdict,
			CompositeConfidence: a.Assessment.Composite, Decision: string(a.Decision.Verdict)}.Event())
	}
	if a.SoleDenyViolation {
		r.append(telemetry.SoleDenyViolation{Time: time.Now(), TxnID: d.TxnID, Agent: d.Agent, Session: d.SessionID, Upstream: d.Upstream,
			Tool: d.ToolName, PolicyVersion: a.Decision.PolicyVersion, Outcome: telemetry.SoleDenyOverridden,
			Decision: string(a.Decision.Verdict)}.Event())
	}
}

func (r *recorder) lifecycle(e classifier.LifecycleEvent, provider string, profile classifier.Profile) {
	phase := telemetry.ClassifierStarted
	switch e.Type {
	case classifier.EventClassifierRevoked:
		phase = telemetry.ClassifierClosed
	case classifier.EventClassifierReinitialized:
		phase = "reinitialized"
	}
	if provider == "" {
		provider = "builtin"
	}
	r.append(telemetry.ClassifierLifecycle{Time: e.At, Session: e.SessionID, ClassifierID: e.ClassifierID, Phase: phase,
		Provider: provider, ActiveProfile: string(profile), ToolInventoryHash: e.InventoryHash,
		Classified: e.Classified, Mismatches: e.Mismatches}.Event())
}

// breaker records a classifier provider's circuit breaker changing state.
// It runs under gobreaker's lock: it only appends.
func (r *recorder) breaker(provider, from, to string) {
	r.metrics.BreakerState(provider, to)
	r.append(telemetry.BreakerChange{Time: time.Now(), Upstream: "classifier:" + provider, From: from, To: to}.Event())
}

// resultInjection records a tool result that looks like a prompt injection.
func (r *recorder) resultInjection(d *intercept.ActionDescriptor, fs []classifier.InjectionFinding, withheld bool) {
	kinds := make([]any, 0, len(fs))
	for _, f := range fs {
		kinds = append(kinds, f.Kind)
	}
	r.append(telemetry.Event{Type: "sluice.injection_in_result", Time: time.Now(), TxnID: d.TxnID, Agent: d.Agent,
		Session: d.SessionID, Upstream: d.Upstream, Tool: d.ToolName, Attrs: map[string]any{"findings": kinds, "withheld": withheld}})
}

// withheldBecause is what the client of a result with findings fs (an
// answer to method) is told instead of it, "" when there are none. It
// names the kinds, never the evidence: that is the text the model must
// not read.
func withheldBecause(method string, fs []classifier.InjectionFinding) string {
	if len(fs) == 0 {
		return ""
	}
	kinds := make([]string, len(fs))
	for i, f := range fs {
		kinds[i] = f.Kind
	}
	what := map[string]string{"tools/call": "this tool's result", "tasks/result": "this task's result", "resources/read": "this resource", "prompts/get": "this prompt",
		// What an upstream sends its client (gateway/upstreamasks.go):
		// the reason goes to the log and the event only (a request is
		// answered to the upstream with a fixed message).
		"sampling/createMessage": "this sampling request", "elicitation/create": "this elicitation request",
		"notifications/progress": "this progress message", "notifications/message": "this log message", "notifications/tasks/status": "this task status",
		"notifications/cancelled": "this cancellation", "notifications/resources/updated": "this resource update",
		"tasks/get": "this task status", "tasks/cancel": "this task status", "tasks/list": "this task list"}[method]
	if what == "" {
		what = "this answer" // an error answering no request known
	}
	return "Sluice withheld " + what + ": it looks like a prompt injection (" + strings.Join(kinds, ", ") +
		"). Its text was not passed on."
}

func (r *recorder) approval(req approval.Request) {
	state := map[approval.Status]string{approval.Pending: telemetry.ApprovalRequested, approval.Approved: telemetry.ApprovalApproved,
		approval.Declined: telemetry.ApprovalDeclined, approval.Expired: telemetry.ApprovalExpired, approval.Used: "used",
		approval.Withdrawn: telemetry.ApprovalWithdrawn}[req.Status]
	r.append(telemetry.Approval{Time: time.Now(), ApprovalID: req.ID, TxnID: req.TxnID, Agent: req.Agent, Session: req.Session,
		Upstream: req.Upstream, Tool: req.Tool, State: state, By: req.DecidedBy}.Event())
}

func (r *recorder) inventory(e inventory.Event) {
	r.append(telemetry.Event{Type: string(e.Type), Time: time.Now(), Upstream: e.Upstream, Tool: e.Tool, Attrs: e.Detail})
}

// runEvents is `sluice events query|tail|export`, reading the audit store
// of the data directory (from --config, or the default) or --db.
func runEvents(ctx context.Context, args []string, out io.Writer) error {
	var cfgPath string
	for i := 0; i < len(args); i++ {
		// Every spelling Go's flag package takes, as the other verbs do:
		// --config FILE, --config=FILE, -config FILE, -config=FILE.
		name, value, hasValue := strings.Cut(args[i], "=")
		if name != "--config" && name != "-config" {
			continue
		}
		if hasValue {
			cfgPath = value
			args = append(args[:i:i], args[i+1:]...)
			break
		}
		if i+1 < len(args) {
			cfgPath = args[i+1]
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	hasDB := false
	for _, a := range args {
		// Help needs no database: don't create the data directory for it.
		if a == "--db" || a == "-db" || strings.HasPrefix(a, "--db=") || strings.HasPrefix(a, "-db=") || isHelp(a) {
			hasDB = true
		}
	}
	if !hasDB && len(args) > 0 {
		cfg := &config{}
		if cfgPath != "" {
			var err error
			if cfg, err = loadConfig(cfgPath); err != nil {
				return err
			}
		}
		dir, err := cfg.dataDir()
		if err != nil {
			return err
		}
		args = append([]string{args[0], "--db", filepath.Join(dir, audit.FileName)}, args[1:]...)
	}
	return audit.RunEventsCLI(ctx, args, out)
}

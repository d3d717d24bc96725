package telemetry

import (
	"strings"
	"time"
	"unicode/utf8"
)

// The typed builders below each describe one event type. Their JSON names
// are the event's field names: the top-level ones (time, txn_id, agent,
// session, upstream, tool, decision, reason) go to [Event]'s fields, the
// rest to Attrs. Event() builds the event; [Event.Decode] reverses it.
// Zero-valued strings, lists and counts are left out of Attrs.

// Evidence is ADR-027's evidence of a decision.
type Evidence struct {
	MatchedToolName    string   `json:"matched_tool_name,omitempty"`
	MatchedToolClasses []string `json:"matched_tool_classes,omitempty"`
	MatchedRouteRuleID string   `json:"matched_route_rule_id,omitempty"`
	ReasonCode         string   `json:"reason_code,omitempty"`
}

// bounded is e with its tool name as [ToolName] records it: the agent's.
func (e Evidence) bounded() Evidence {
	e.MatchedToolName = ToolName(e.MatchedToolName)
	return e
}

func (e Evidence) empty() bool {
	return e.MatchedToolName == "" && len(e.MatchedToolClasses) == 0 && e.MatchedRouteRuleID == "" && e.ReasonCode == ""
}

// PolicyEnforcement is a [TypePolicyEnforced] event: what the gateway
// decided about one call and on what grounds. It carries enough of the
// action descriptor to evaluate the call again under another policy
// (replay), with the arguments only as [Redactor] allows.
type PolicyEnforcement struct {
	Time     time.Time `json:"time"`
	TxnID    string    `json:"txn_id"`
	Agent    string    `json:"agent,omitempty"`
	Session  string    `json:"session,omitempty"`
	Upstream string    `json:"upstream,omitempty"`
	Tool     string    `json:"tool"`
	// CallID is the JSON-RPC id of the tools/call as raw JSON text.
	CallID string `json:"call_id,omitempty"`
	// Decision is allow, deny or require_approval.
	Decision string `json:"decision"`
	// Reason is the machine-readable reason code.
	Reason string `json:"reason"`
	// PublicReason is the text shown to the model.
	PublicReason  string   `json:"public_reason,omitempty"`
	ResultMode    string   `json:"result_mode,omitempty"`
	PolicyVersion string   `json:"policy_version,omitempty"`
	RuleID        string   `json:"rule_id,omitempty"`
	ApprovalID    string   `json:"approval_id,omitempty"`
	Evidence      Evidence `json:"evidence,omitzero"`
	// Latency is the time the decision took.
	Latency time.Duration `json:"latency_ns,omitempty"`

	// The rest of the action descriptor (RFC-010 §7.4).
	ToolInventoryHash       string `json:"tool_inventory_hash,omitempty"`
	TargetEndpoint          string `json:"target_endpoint,omitempty"`
	CapabilityClassDeclared string `json:"capability_class_declared,omitempty"`
	ActionTypeDeclared      string `json:"action_type_declared,omitempty"`
	BoundaryDeclared        string `json:"boundary_declared,omitempty"`
	ProtocolVersion         string `json:"protocol_version,omitempty"`
	// TraceID links the event to the call's trace.
	TraceID string `json:"trace_id,omitempty"`
	// AuthMethod is how the agent authenticated (api_key, jwt, mtls);
	// empty when identity is self-declared. ClientName is the name the
	// client gave itself when it differs from the authenticated agent.
	AuthMethod string `json:"auth_method,omitempty"`
	ClientName string `json:"client_name,omitempty"`
	// Arguments are the call's arguments as [Redactor.Arguments] left
	// them: a hash, and the redacted value only if configured.
	Arguments
}

// Event returns p as an [Event].
func (p PolicyEnforcement) Event() Event { return withAttrs(p.Header(), p.attrs) }

// withAttrs returns h with the Attrs that fill writes.
func withAttrs(h Event, fill func(attrSink)) Event {
	a := make(attrs, 16)
	fill(attrSink{m: a})
	h.Attrs = a
	return h
}

// Header returns p's event without attrs ([Record]).
func (p PolicyEnforcement) Header() Event {
	return Event{
		Type: TypePolicyEnforced, Time: p.Time, TxnID: p.TxnID, Agent: p.Agent, Session: p.Session,
		Upstream: p.Upstream, Tool: p.Tool, Decision: p.Decision, Reason: p.Reason,
	}
}

// AppendAttrs appends p's attrs as JSON object members ([Record]).
func (p PolicyEnforcement) AppendAttrs(b []byte) ([]byte, error) {
	j := jsonAttrs{b: b}
	p.attrs(attrSink{j: &j})
	return j.b, j.err
}

func (p PolicyEnforcement) attrs(a attrSink) {
	a.str("call_id", p.CallID)
	if strings.HasPrefix(p.Tool, ReadPrefix) {
		a.str("public_reason", Scrub(Bound(p.PublicReason, MaxRecordedText))) // it may quote the URI ([ToolName])
	} else {
		a.str("public_reason", p.PublicReason)
	}
	a.str("result_mode", p.ResultMode)
	a.str("policy_version", p.PolicyVersion)
	a.str("rule_id", p.RuleID)
	a.str("approval_id", p.ApprovalID)
	if !p.Evidence.empty() {
		a.evidence("evidence", p.Evidence)
	}
	a.num("latency_ns", int64(p.Latency))
	a.str("tool_inventory_hash", p.ToolInventoryHash)
	a.str("target_endpoint", p.TargetEndpoint)
	a.str("capability_class_declared", p.CapabilityClassDeclared)
	a.str("action_type_declared", p.ActionTypeDeclared)
	a.str("boundary_declared", p.BoundaryDeclared)
	a.str("protocol_version", p.ProtocolVersion)
	a.str("trace_id", p.TraceID)
	a.str("auth_method", p.AuthMethod)
	a.str("client_name", p.ClientName)
	a.str("arguments_sha256", p.SHA256)
	if p.Value != nil {
		a.value("arguments", p.Value)
	}
}

// AxisClassification is the verdict on one axis (RFC-010 §7.5).
type AxisClassification struct {
	Classified                 string  `json:"classified"`
	Confidence                 float64 `json:"confidence"`
	Source                     string  `json:"source,omitempty"`
	ConservativeDefaultApplied bool    `json:"conservative_default_applied"`
}

// IntentClassification is a [TypeIntentClassified] event: RFC-010 §9.2's
// capiscio.intent_classified under Sluice's names (agent for
// parent_agent_did, classifier_id for classifier_did, session for
// session_id, tool for tool_name). It is correlated with the call's
// [PolicyEnforcement] by txn_id.
type IntentClassification struct {
	Time     time.Time `json:"time"`
	TxnID    string    `json:"txn_id"`
	Agent    string    `json:"agent,omitempty"`
	Session  string    `json:"session,omitempty"`
	Upstream string    `json:"upstream,omitempty"`
	Tool     string    `json:"tool"`
	// ClassifierID identifies the classifier session.
	ClassifierID              string                        `json:"classifier_id,omitempty"`
	CapabilityClassDeclared   string                        `json:"capability_class_declared,omitempty"`
	CapabilityClassVerdict    string                        `json:"capability_class_verdict,omitempty"`
	CapabilityClassConfidence float64                       `json:"capability_class_confidence"`
	ConsistentWithDeclaration bool                          `json:"consistent_with_declaration"`
	CompositeConfidence       float64                       `json:"composite_confidence"`
	Axes                      map[string]AxisClassification `json:"axes,omitempty"`
	// ActiveProfile is "default" or "extended".
	ActiveProfile string `json:"active_profile,omitempty"`
	// Provider names the classifier backend.
	Provider string `json:"provider,omitempty"`
	// ClassifiedAt is Unix seconds, as in the RFC.
	ClassifiedAt int64 `json:"classified_at,omitempty"`
	// Latency is the time the classification took.
	Latency time.Duration `json:"latency_ns,omitempty"`
	// Error says why the classifier fell back to a low-confidence
	// verdict, if it did; it is scrubbed.
	Error string `json:"error,omitempty"`
	// RiskLevel and RiskFactors are the call's IntentRecord's: LOW,
	// MEDIUM, HIGH or CRITICAL, and why (write_operation,
	// prompt_injection:…, tool_poisoning:…).
	RiskLevel   string   `json:"risk_level,omitempty"`
	RiskFactors []string `json:"risk_factors,omitempty"`
}

// Event returns c as an [Event].
func (c IntentClassification) Event() Event { return withAttrs(c.Header(), c.attrs) }

// Header returns c's event without attrs ([Record]).
func (c IntentClassification) Header() Event {
	return Event{
		Type: TypeIntentClassified, Time: c.Time, TxnID: c.TxnID, Agent: c.Agent, Session: c.Session,
		Upstream: c.Upstream, Tool: c.Tool,
	}
}

// AppendAttrs appends c's attrs as JSON object members ([Record]).
func (c IntentClassification) AppendAttrs(b []byte) ([]byte, error) {
	j := jsonAttrs{b: b}
	c.attrs(attrSink{j: &j})
	return j.b, j.err
}

func (c IntentClassification) attrs(a attrSink) {
	a.float("capability_class_confidence", c.CapabilityClassConfidence)
	a.flag("consistent_with_declaration", c.ConsistentWithDeclaration)
	a.float("composite_confidence", c.CompositeConfidence)
	a.str("classifier_id", c.ClassifierID)
	a.str("capability_class_declared", c.CapabilityClassDeclared)
	a.str("capability_class_verdict", c.CapabilityClassVerdict)
	if len(c.Axes) > 0 {
		a.value("axes", c.Axes)
	}
	a.str("active_profile", c.ActiveProfile)
	a.str("provider", c.Provider)
	a.num("classified_at", c.ClassifiedAt)
	a.num("latency_ns", int64(c.Latency))
	if c.Error != "" {
		a.str("error", Scrub(c.Error))
	}
	a.str("risk_level", c.RiskLevel)
	a.strs("risk_factors", c.RiskFactors)
}

// Causes of an [IntentMismatch] (RFC-010 §6, §9.3).
const (
	MismatchCapability    = "CAPABILITY_MISMATCH"
	MismatchLowConfidence = "LOW_CONFIDENCE"
)

// IntentMismatch is a [TypeIntentMismatch] event, RFC-010's
// INTENT_CLASSIFICATION_MISMATCH: what was declared, what the classifier
// found, on which axis, and what the gateway then did.
type IntentMismatch struct {
	Time     time.Time `json:"time"`
	TxnID    string    `json:"txn_id"`
	Agent    string    `json:"agent,omitempty"`
	Session  string    `json:"session,omitempty"`
	Upstream string    `json:"upstream,omitempty"`
	Tool     string    `json:"tool"`
	// Reason is [MismatchCapability] or [MismatchLowConfidence].
	Reason string `json:"reason"`
	// Axis is the axis that disagreed, or "capability_class".
	Axis                string  `json:"axis,omitempty"`
	Declared            string  `json:"declared,omitempty"`
	Classified          string  `json:"classified,omitempty"`
	CompositeConfidence float64 `json:"composite_confidence"`
	// Decision is what happened to the call: usually require_approval
	// (escalation); never a deny on the mismatch alone.
	Decision string `json:"decision,omitempty"`
}

// Event returns m as an [Event].
func (m IntentMismatch) Event() Event {
	a := attrs{"composite_confidence": m.CompositeConfidence}
	a.str("axis", m.Axis)
	a.str("declared", m.Declared)
	a.str("classified", m.Classified)
	return Event{
		Type: TypeIntentMismatch, Time: m.Time, TxnID: m.TxnID, Agent: m.Agent, Session: m.Session,
		Upstream: m.Upstream, Tool: m.Tool, Decision: m.Decision, Reason: m.Reason, Attrs: a,
	}
}

// Outcomes of a [SoleDenyViolation] re-evaluation (RFC-010 §12.3).
const (
	SoleDenyOverridden = "overridden" // re-evaluated without classifier fields: allowed
	SoleDenyStands     = "stands"     // denied on deterministic grounds too
)

// SoleDenyViolation is a [TypeSoleDenyViolation] event,
// CLASSIFIER_SOLE_DENY_VIOLATION: a deny that rested only on
// classification.* fields, and the outcome of re-evaluating without them.
type SoleDenyViolation struct {
	Time     time.Time `json:"time"`
	TxnID    string    `json:"txn_id"`
	Agent    string    `json:"agent,omitempty"`
	Session  string    `json:"session,omitempty"`
	Upstream string    `json:"upstream,omitempty"`
	Tool     string    `json:"tool,omitempty"`
	// Fields are the classification.* fields the deny rested on.
	Fields        []string `json:"classification_fields,omitempty"`
	RuleID        string   `json:"rule_id,omitempty"`
	PolicyVersion string   `json:"policy_version,omitempty"`
	// Outcome is [SoleDenyOverridden] or [SoleDenyStands].
	Outcome string `json:"outcome"`
	// Decision and Reason are the final ones, after re-evaluation.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Event returns v as an [Event].
func (v SoleDenyViolation) Event() Event {
	a := attrs{}
	a.strs("classification_fields", v.Fields)
	a.str("rule_id", v.RuleID)
	a.str("policy_version", v.PolicyVersion)
	a.str("outcome", v.Outcome)
	return Event{
		Type: TypeSoleDenyViolation, Time: v.Time, TxnID: v.TxnID, Agent: v.Agent, Session: v.Session,
		Upstream: v.Upstream, Tool: v.Tool, Decision: v.Decision, Reason: v.Reason, Attrs: a,
	}
}

// Phases of a classifier session.
const (
	ClassifierStarted = "started"
	ClassifierClosed  = "closed"
	ClassifierFailed  = "failed"
)

// ClassifierLifecycle is a [TypeClassifierLifecycle] event: a classifier
// session (RFC-010 §7, §9.1) starting, closing with its totals, or failing.
type ClassifierLifecycle struct {
	Time time.Time `json:"time"`
	// Agent is the parent agent the classifier serves.
	Agent        string `json:"agent,omitempty"`
	Session      string `json:"session,omitempty"`
	ClassifierID string `json:"classifier_id"`
	// Phase is [ClassifierStarted], [ClassifierClosed] or
	// [ClassifierFailed].
	Phase             string `json:"phase"`
	Provider          string `json:"provider,omitempty"`
	ActiveProfile     string `json:"active_profile,omitempty"`
	ToolInventoryHash string `json:"tool_inventory_hash,omitempty"`
	// Classified and Mismatches are the session's totals, on close.
	Classified int64 `json:"classified,omitempty"`
	Mismatches int64 `json:"mismatches,omitempty"`
	// Error says why the session failed; it is scrubbed.
	Error string `json:"error,omitempty"`
}

// Event returns c as an [Event].
func (c ClassifierLifecycle) Event() Event {
	a := attrs{}
	a.str("classifier_id", c.ClassifierID)
	a.str("phase", c.Phase)
	a.str("provider", c.Provider)
	a.str("active_profile", c.ActiveProfile)
	a.str("tool_inventory_hash", c.ToolInventoryHash)
	a.num("classified", c.Classified)
	a.num("mismatches", c.Mismatches)
	a.str("error", Scrub(c.Error))
	return Event{Type: TypeClassifierLifecycle, Time: c.Time, Agent: c.Agent, Session: c.Session, Attrs: a}
}

// Approval states.
const (
	ApprovalRequested = "requested"
	ApprovalApproved  = "approved"
	ApprovalDeclined  = "declined"
	ApprovalExpired   = "expired"
	// ApprovalWithdrawn: the client cancelled the held call, or the
	// gateway refused it because its credential no longer held.
	ApprovalWithdrawn = "withdrawn"
)

// Approval is a [TypeApproval] event: a human approval of a held call, or
// of a changed tool's new version (Subject "inventory"), changing state.
type Approval struct {
	Time       time.Time `json:"time"`
	ApprovalID string    `json:"approval_id"`
	TxnID      string    `json:"txn_id,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Session    string    `json:"session,omitempty"`
	Upstream   string    `json:"upstream,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	// Subject is "tool_call" (the default when empty) or "inventory".
	Subject string `json:"subject,omitempty"`
	// State is one of the Approval… constants.
	State string `json:"state"`
	// By names who decided, for approved and declined.
	By string `json:"by,omitempty"`
	// Reason is the reason code the approval was requested for, or the
	// decider's note.
	Reason string `json:"reason,omitempty"`
}

// Event returns p as an [Event].
func (p Approval) Event() Event {
	a := attrs{}
	a.str("approval_id", p.ApprovalID)
	a.str("subject", p.Subject)
	a.str("state", p.State)
	a.str("by", p.By)
	return Event{
		Type: TypeApproval, Time: p.Time, TxnID: p.TxnID, Agent: p.Agent, Session: p.Session,
		Upstream: p.Upstream, Tool: p.Tool, Reason: p.Reason, Attrs: a,
	}
}

// Drift changes.
const (
	DriftAdded   = "added"
	DriftRemoved = "removed"
	DriftChanged = "changed"
)

// InventoryDrift is a [TypeInventoryDrift] event: a tool that differs from
// its pinned version.
type InventoryDrift struct {
	Time     time.Time `json:"time"`
	Upstream string    `json:"upstream"`
	Tool     string    `json:"tool"`
	// Change is [DriftAdded], [DriftRemoved] or [DriftChanged].
	Change string `json:"change"`
	// Fields are what changed: description, input_schema, output_schema,
	// annotations.
	Fields       []string `json:"fields,omitempty"`
	PinnedHash   string   `json:"pinned_hash,omitempty"`
	CurrentHash  string   `json:"current_hash,omitempty"`
	SnapshotHash string   `json:"snapshot_hash,omitempty"`
	// Action is "blocked" or "warned", per configuration.
	Action string `json:"action,omitempty"`
}

// Event returns d as an [Event].
func (d InventoryDrift) Event() Event {
	a := attrs{}
	a.str("change", d.Change)
	a.strs("fields", d.Fields)
	a.str("pinned_hash", d.PinnedHash)
	a.str("current_hash", d.CurrentHash)
	a.str("snapshot_hash", d.SnapshotHash)
	a.str("action", d.Action)
	return Event{Type: TypeInventoryDrift, Time: d.Time, Upstream: d.Upstream, Tool: d.Tool, Reason: "inventory_drift", Attrs: a}
}

// InventoryRejection is a [TypeInventoryRejected] event: a stored
// snapshot that was unsigned, badly signed or unreadable.
type InventoryRejection struct {
	Time     time.Time `json:"time"`
	Upstream string    `json:"upstream"`
	// Reason is a code such as "unsigned" or "bad_signature".
	Reason string `json:"reason"`
	// Detail is the error text; it is scrubbed.
	Detail string `json:"detail,omitempty"`
	Path   string `json:"path,omitempty"`
}

// Event returns r as an [Event].
func (r InventoryRejection) Event() Event {
	a := attrs{}
	a.str("detail", Scrub(r.Detail))
	a.str("path", r.Path)
	return Event{Type: TypeInventoryRejected, Time: r.Time, Upstream: r.Upstream, Reason: r.Reason, Attrs: a}
}

// maxExcerpt bounds the quoted text of a poisoning finding, in bytes.
const maxExcerpt = 256

// PoisoningFinding is a [TypeToolPoisoning] event: something in a tool's
// description or schema that tries to steer the model.
type PoisoningFinding struct {
	Time     time.Time `json:"time"`
	Upstream string    `json:"upstream"`
	Tool     string    `json:"tool"`
	// Rule names the check that fired, e.g. "hidden_instructions",
	// "invisible_unicode", "long_description".
	Rule string `json:"rule"`
	// Severity is "low", "medium" or "high".
	Severity string `json:"severity,omitempty"`
	// Field is where it was found: description, input_schema, …
	Field string `json:"field,omitempty"`
	// Excerpt quotes the finding, scrubbed and cut to 256 bytes.
	Excerpt  string `json:"excerpt,omitempty"`
	ToolHash string `json:"tool_hash,omitempty"`
}

// Event returns f as an [Event].
func (f PoisoningFinding) Event() Event {
	a := attrs{}
	a.str("rule", f.Rule)
	a.str("severity", f.Severity)
	a.str("field", f.Field)
	a.str("excerpt", truncate(Scrub(f.Excerpt), maxExcerpt))
	a.str("tool_hash", f.ToolHash)
	return Event{Type: TypeToolPoisoning, Time: f.Time, Upstream: f.Upstream, Tool: f.Tool, Reason: f.Rule, Attrs: a}
}

// ToolCollision is a [TypeToolCollision] event: one tool name offered by
// more than one upstream.
type ToolCollision struct {
	Time      time.Time `json:"time"`
	Tool      string    `json:"tool"`
	Upstreams []string  `json:"upstreams"`
}

// Event returns c as an [Event].
func (c ToolCollision) Event() Event {
	a := attrs{}
	a.strs("upstreams", c.Upstreams)
	return Event{Type: TypeToolCollision, Time: c.Time, Tool: c.Tool, Attrs: a}
}

// BreakerChange is a [TypeBreakerStateChanged] event.
type BreakerChange struct {
	Time     time.Time `json:"time"`
	Upstream string    `json:"upstream"`
	// From and To are "closed", "half-open" or "open".
	From string `json:"from"`
	To   string `json:"to"`
	// Error is the failure that tripped the breaker, if known; scrubbed.
	Error string `json:"error,omitempty"`
}

// Event returns b as an [Event].
func (b BreakerChange) Event() Event {
	a := attrs{}
	a.str("from", b.From)
	a.str("to", b.To)
	a.str("error", Scrub(b.Error))
	return Event{Type: TypeBreakerStateChanged, Time: b.Time, Upstream: b.Upstream, Attrs: a}
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

package govern

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"
)

// Reason codes of decisions the classifier's advice leads to.
const (
	ReasonEscalation = "classifier_escalation"
	ReasonInjection  = "injection_suspected"
	// ReasonSoleAllow is the reason of a call whose allow rested only on
	// classification.*: the classifier never allows alone, so it is held
	// for a human, or the decision without classification stands.
	ReasonSoleAllow = "classifier_sole_allow"
	// EventSoleDenyViolation is RFC-010 §12.3's event: a deny resting only
	// on classification.* attributes, overridden.
	EventSoleDenyViolation = "CLASSIFIER_SOLE_DENY_VIOLATION"
)

// Action is what to do with an allowed call the advice flags. The zero
// value, like ActionLog, only records the advice: the policy's decision
// stands, so a gateway configured with a policy alone is transparent.
type Action string

const (
	// ActionApprove holds the call for a human, where one can answer (see
	// Advisor.OperatorAnswers); otherwise the policy's decision stands.
	ActionApprove Action = "approve"
	// ActionLog only records the advice.
	ActionLog Action = "log"
	// ActionDeny denies; allowed only for deterministic findings
	// (injection), never for the classifier's verdict.
	ActionDeny Action = "deny"
)

// Why an escalation or injection finding left the policy's decision
// standing (Advice.Unheld).
const (
	// UnheldNotConfigured: the action for it is not approve.
	UnheldNotConfigured = "not_configured"
	// UnheldNobodyAnswers: approve, but no operator and not the client
	// could answer the call if it were held.
	UnheldNobodyAnswers = "nobody_answers"
)

// Advice is everything the classifier said about one call.
type Advice struct {
	Descriptor *intercept.ActionDescriptor
	Verdict    classifier.Verdict
	Assessment classifier.Assessment
	Intent     classifier.IntentRecord
	// Err is the classifier's error, if any; the verdict is then its
	// low-confidence fallback.
	Err error
	// SoleDenyViolation is set when a deny rested only on classification.*
	// and was replaced by the decision without it.
	SoleDenyViolation bool
	// SoleAllow is set when an allow, or a hold over the policy's deny,
	// rested only on classification.* (the policy without it did not
	// allow): the call was held, or the decision without classification
	// stood.
	SoleAllow bool
	// Escalated is set when the advice turned an allow into a hold (or,
	// for injection with ActionDeny, a deny).
	Escalated bool
	Latency   time.Duration
	Decision  intercept.Decision

	// Unheld says why an allowed call the advice flagged (uncertain, or
	// injection suspected, or held by a rule reading classification.*) was
	// not held: UnheldNotConfigured or UnheldNobodyAnswers; empty when
	// nothing was flagged or it was held.
	Unheld string
}

// Advisor runs a classifier beside the deterministic policy and applies
// RFC-010's rules to its verdict: the verdict is visible to policy
// conditions as classification.*, an uncertain verdict sends an allowed
// call to a human instead of through, and a deny that rests only on the
// classification is overridden (CLASSIFIER_SOLE_DENY_VIOLATION). The
// classifier can never deny a call by itself nor allow one. Safe for
// concurrent use.
type Advisor struct {
	Policy     intercept.Decider
	Classifier classifier.Classifier // nil: the policy alone decides
	Options    classifier.Options    // scoring: profile, weights, thresholds
	// OnEscalate applies to allowed calls whose disposition is escalate or
	// mandatory escalate: ActionApprove holds them where someone can
	// answer; "" (the default) or ActionLog records the advice and lets
	// the policy's allow stand. ActionDeny, refused by configuration,
	// counts as ActionApprove: the classifier never denies.
	OnEscalate Action
	// OnInjection applies to allowed calls whose arguments look like a
	// prompt injection: ActionApprove holds them where someone can answer,
	// ActionDeny denies them, "" (the default) or ActionLog records them.
	OnInjection Action
	// OperatorAnswers says an operator can answer held calls (the admin
	// API is served: admin_listen). Without it ActionApprove holds a call
	// only when the client can be asked about it
	// (ActionDescriptor.ClientCanApprove); a call nobody could answer
	// would only wait for its approval timeout and fail.
	OperatorAnswers bool
	// OnAdvice, if set, gets every advice after the decision. It must not
	// block, and the *Advice is valid only until it returns (advices are
	// reused): copy what must outlive the call.
	OnAdvice func(*Advice)
	// Tracer, if set, gets a span for each classification.
	Tracer telemetry.Tracer
	// ToolPoisoning, if set, returns the rules of the tool-poisoning
	// findings in the current version of a tool's description and schema
	// (the inventory's scan). They are risk factors of every call to the
	// tool, and policy sees classification.tool_poisoning: deterministic,
	// like injection_suspected, so a rule may deny on it.
	ToolPoisoning func(upstream, tool string) []string
}

type classified struct {
	v   classifier.Verdict
	err error
}

// classify runs the classifier on d in a span of its own. A method, not
// a closure in Decide: a closure that a goroutine may run is on the heap,
// for every call, immediate classifiers' too.
//
// A classifier that panics gave no verdict: the call is an unclassified
// one. Unrecovered, a panic on the goroutine Decide runs it on ended the
// process, and one on Decide's own was a policy_error deny, the
// classifier's alone.
func (a *Advisor) classify(ctx context.Context, d *intercept.ActionDescriptor) (c classified) {
	cctx, span := telemetry.StartStage(ctx, a.Tracer, telemetry.StageClassification)
	defer func() {
		if r := recover(); r != nil {
			c = classified{err: fmt.Errorf("classifier panicked: %v", r)}
		}
		span.End(c.err)
	}()
	v, err := a.Classifier.Classify(cctx, d)
	return classified{v, err}
}

func (a *Advisor) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	if a.Classifier == nil || !d.IsTool() {
		// The classifier judges tool calls; reads are the policy's alone.
		return intercept.Decide(ctx, a.Policy, d), nil
	}
	start := time.Now()
	var ch chan classified
	if !classifier.Immediate(a.Classifier) {
		ch = make(chan classified, 1)
		go func() { ch <- a.classify(ctx, d) }()
	}
	// The deterministic decision needs no classifier: compute it while the
	// classifier works, so the slower of the two sets the latency.
	// Injection findings are deterministic, so policy may use them here.
	findings := classifier.DetectInjection(d.Parameters)
	var poisoning []string
	if a.ToolPoisoning != nil {
		poisoning = a.ToolPoisoning(d.Upstream, d.ToolName)
	}
	cr, ok := a.Policy.(interface{ ReadsClassification() bool })
	reads := !ok || cr.ReadsClassification()
	var base intercept.Decision
	if reads {
		d0 := *d
		d0.Classification = map[string]any{"injection_suspected": len(findings) > 0, "tool_poisoning": len(poisoning) > 0,
			policy.ClassificationWithheld: true}
		base = intercept.Decide(ctx, a.Policy, &d0)
	} else {
		// A policy that reads no classification.* decides the same
		// without it: no copy of the descriptor to make.
		base = intercept.Decide(ctx, a.Policy, d)
	}
	var r classified
	if ch != nil {
		r = <-ch
	} else {
		r = a.classify(ctx, d)
	}

	adv := advices.Get().(*Advice)
	defer func() {
		*adv = Advice{}
		advices.Put(adv)
	}()
	*adv = Advice{Descriptor: d, Verdict: r.v, Err: r.err}
	adv.Assessment = classifier.Assess(r.v, a.Options)
	adv.Intent = classifier.NewIntentRecord(d, r.v, classifier.IntentOptions{Options: a.Options, SkipInjection: true, Findings: findings,
		ToolPoisoning: poisoning, RiskOnly: true}) // what the events record of it
	adv.Intent.TxnID = d.TxnID

	final := base
	if reads {
		// A policy that reads classification.* decides again with it; one
		// that does not would decide the same.
		d1 := *d
		d1.Classification = classificationAttrs(r.v, adv)
		final = intercept.Decide(ctx, a.Policy, &d1)
	}
	if final.Verdict == intercept.Deny && base.Verdict != intercept.Deny {
		// The deny rests only on classification.*: RFC-010 §12.3.
		adv.SoleDenyViolation = true
		final = base
	}
	answers := a.OperatorAnswers || d.ClientCanApprove
	switch {
	case final.Verdict == base.Verdict:
		// The decision stands without classification.*: the record
		// names the rule it stands on, not one that reads the verdict.
		final = base
	case base.Verdict == intercept.Deny:
		// An allow, or a hold, rests only on classification.*, which the
		// agent's own arguments shape: the classifier never allows alone.
		// An operator may let it through; where none can answer, the
		// decision without classification stands. Not the client's user:
		// where the client is the agent (client_may_answer), the agent
		// would shape the verdict and answer the hold it made.
		adv.SoleAllow = true
		if a.OperatorAnswers {
			final = flag(final, false, ReasonSoleAllow, "this call is allowed only on the classifier's judgement, which needs an operator's confirmation")
			final.OperatorOnly = true
			adv.Escalated = true
		} else {
			final = base
		}
	case final.Verdict == intercept.Allow:
		// base holds the call: the classifier does not let it through.
		adv.SoleAllow = true
		final = base
	case !answers:
		// A hold resting only on classification.* is an escalation: held
		// only where someone can answer, or it would wait for its
		// approval timeout and fail, a deny of the classifier's.
		adv.Unheld = UnheldNobodyAnswers
		final = base
	}
	if final.Verdict == intercept.Allow {
		final = a.escalate(final, d, adv)
	}
	adv.Decision, adv.Latency = final, time.Since(start)
	if a.OnAdvice != nil {
		a.OnAdvice(adv)
	}
	return final, nil
}

// advices are the Advice of calls being decided, reused: one is a large
// struct, and every tool call has one.
var advices = sync.Pool{New: func() any { return new(Advice) }}

// escalate applies OnInjection and OnEscalate to dec, an allow: the first
// finding whose action holds (where someone can answer) or denies wins;
// otherwise adv.Unheld says why dec stands.
func (a *Advisor) escalate(dec intercept.Decision, d *intercept.ActionDescriptor, adv *Advice) intercept.Decision {
	type finding struct {
		on             Action
		reason, public string
	}
	var found []finding
	if adv.Intent.InjectionSuspected {
		found = append(found, finding{a.OnInjection, ReasonInjection, "the arguments of this call look like a prompt injection"})
	}
	if adv.Assessment.Disposition <= classifier.Escalate {
		on := a.OnEscalate
		if on == ActionDeny {
			on = ActionApprove
		}
		found = append(found, finding{on, ReasonEscalation,
			fmt.Sprintf("this call needs a human's review: the classifier is not confident about it (composite %.2f)", adv.Assessment.Composite)})
	}
	for _, f := range found {
		switch {
		case f.on == ActionDeny:
			adv.Escalated, adv.Unheld = true, ""
			return flag(dec, true, f.reason, f.public)
		case f.on != ActionApprove:
			if adv.Unheld == "" {
				adv.Unheld = UnheldNotConfigured
			}
		case !a.OperatorAnswers && !d.ClientCanApprove:
			adv.Unheld = UnheldNobodyAnswers
		default:
			adv.Escalated, adv.Unheld = true, ""
			return flag(dec, false, f.reason, f.public)
		}
	}
	return dec
}

func flag(d intercept.Decision, deny bool, reason, public string) intercept.Decision {
	d.Verdict, d.Reason, d.PublicReason = intercept.RequireApproval, reason, public
	if deny {
		d.Verdict = intercept.Deny
	}
	d.Evidence.ReasonCode = reason
	return d
}

// classificationAttrs is what policy conditions see as classification.*.
func classificationAttrs(v classifier.Verdict, adv *Advice) map[string]any {
	m := map[string]any{
		"composite_confidence":        adv.Assessment.Composite,
		"disposition":                 adv.Assessment.Disposition.String(),
		"consistent_with_declaration": v.ConsistentWithDeclaration,
		"capability_class":            v.CapabilityClassVerdict,
		"risk_level":                  string(adv.Intent.RiskLevel),
		"injection_suspected":         adv.Intent.InjectionSuspected,
		"tool_poisoning":              slices.ContainsFunc(adv.Intent.RiskFactors, isPoisoning),
	}
	for axis, av := range v.Axes.All() {
		m[axis] = av.Classified
		m[axis+"_confidence"] = av.Confidence
	}
	return m
}

func isPoisoning(factor string) bool {
	return strings.HasPrefix(factor, classifier.FactorToolPoisoning+":")
}

// Forwarded passes route-memory updates on to the policy.
func (a *Advisor) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if fo, ok := a.Policy.(intercept.ForwardObserver); ok {
		return fo.Forwarded(ctx, d, dec)
	}
	return nil
}

// Visible implements intercept.ToolFilter by asking the policy: the
// classifier's advice never hides a tool.
func (a *Advisor) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	tf, ok := a.Policy.(intercept.ToolFilter)
	return !ok || tf.Visible(ctx, d)
}

// Closes implements intercept.RouteCloser by asking the policy: route
// memory is the policy's.
func (a *Advisor) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return closesTo(a.Policy, ctx, d)
}

// LinkSession implements intercept.SessionLinker by telling Policy.
func (a *Advisor) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	return linkTo(a.Policy, ctx, d, session)
}

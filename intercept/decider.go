package intercept

import (
	"context"
	"fmt"
	"time"
)

// Verdict is the outcome of a decision.
type Verdict string

const (
	Allow           Verdict = "allow"
	Deny            Verdict = "deny"
	RequireApproval Verdict = "require_approval"
)

// ResultMode says how a non-allow decision reaches the client (RFC-0002).
type ResultMode string

const (
	// ModeToolResult answers with a normal tools/call result carrying
	// isError and the denied envelope: a soft deny the model can read.
	ModeToolResult ResultMode = "tool_result"
	// ModeThrow answers with a JSON-RPC error whose data is the envelope.
	ModeThrow ResultMode = "throw"
)

// Decision is what a Decider says about one call.
type Decision struct {
	Verdict Verdict `json:"decision"`
	// Reason is the machine-readable reason code, mandatory (RFC-0002).
	Reason string `json:"reason"`
	// PublicReason is the text shown to the model; Reason is used if empty.
	PublicReason string `json:"public_reason,omitempty"`
	// Mode is the result mode; empty means ModeThrow, as RFC-0002 says of
	// a missing mode.
	Mode ResultMode `json:"result_mode,omitempty"`
	// PolicyVersion identifies the policy that decided, when there is one.
	PolicyVersion string `json:"policy_version,omitempty"`
	// RuleID names the rule that decided, when one did.
	RuleID string `json:"rule_id,omitempty"`
	// ApprovalID names the approval request a require_approval decision
	// opened or is waiting on, if any.
	ApprovalID string `json:"approval_id,omitempty"`
	// Evidence says what the decision rested on (ADR-027).
	Evidence Evidence `json:"evidence"`
	// RetryAfter, on a denial that will pass later (rate_limited), is how
	// long to wait; the envelope's data carries it as retry_after_ms.
	RetryAfter time.Duration `json:"-"`
	// OperatorOnly, on a hold, says only an operator may answer it, never
	// the client's user (approvals.client_may_answer): the hold stands
	// over the policy's deny on the classifier's verdict alone, which the
	// agent's own arguments shape.
	OperatorOnly bool `json:"-"`
}

// Evidence is ADR-027's evidence of a decision.
type Evidence struct {
	MatchedToolName    string   `json:"matched_tool_name,omitempty"`
	MatchedToolClasses []string `json:"matched_tool_classes,omitempty"`
	MatchedRouteRuleID string   `json:"matched_route_rule_id,omitempty"`
	ReasonCode         string   `json:"reason_code,omitempty"`
}

// A ForwardObserver is a Decider that wants to know about every call that
// was allowed and is about to be sent upstream, e.g. to remember which
// sources an agent touched or to use up a one-time approval. The
// interceptor calls Forwarded after an allow, once it is certain the call
// will be sent (a batch only when every element is allowed), and before it
// is sent. An error fails closed: the call is not forwarded and is denied
// with policy_error, so a source whose reading could not be remembered is
// never read. It should not block for long.
type ForwardObserver interface {
	Forwarded(ctx context.Context, d *ActionDescriptor, dec Decision) error
}

// A Decider decides about one tools/call. It must be safe for concurrent
// use. Errors and invalid decisions are turned into denials by [Decide]; a
// Decider never needs to fail open.
type Decider interface {
	Decide(ctx context.Context, d *ActionDescriptor) (Decision, error)
}

// DeciderFunc adapts a function to a Decider.
type DeciderFunc func(ctx context.Context, d *ActionDescriptor) (Decision, error)

func (f DeciderFunc) Decide(ctx context.Context, d *ActionDescriptor) (Decision, error) {
	return f(ctx, d)
}

// Reason codes the decision point itself produces (RFC-0002 default deny).
const (
	ReasonPolicyNotConfigured = "policy_not_configured"
	ReasonInvalidPolicyResult = "invalid_policy_result"
	ReasonPolicyError         = "policy_error"
)

// Decide asks dec about d and fails closed: a nil decider, an error, a
// panic, an unknown verdict or a missing reason all become a deny with the
// RFC-0002 reason code. The returned decision is always valid.
func Decide(ctx context.Context, dec Decider, d *ActionDescriptor) (out Decision) {
	if dec == nil {
		return Decision{Verdict: Deny, Reason: ReasonPolicyNotConfigured, PublicReason: "no policy is configured for this tool call"}
	}
	defer func() {
		if r := recover(); r != nil {
			out = Decision{Verdict: Deny, Reason: ReasonPolicyError, PublicReason: "the policy could not be evaluated"}
		}
	}()
	got, err := dec.Decide(ctx, d)
	if err != nil {
		return Decision{Verdict: Deny, Reason: ReasonPolicyError, PublicReason: "the policy could not be evaluated", Mode: got.Mode}
	}
	switch got.Verdict {
	case Allow, Deny, RequireApproval:
	default:
		return Decision{Verdict: Deny, Reason: ReasonInvalidPolicyResult, PublicReason: "the policy returned an invalid result", Mode: got.Mode}
	}
	if got.Reason == "" {
		return Decision{Verdict: Deny, Reason: ReasonInvalidPolicyResult, PublicReason: "the policy returned a decision without a reason", Mode: got.Mode}
	}
	switch got.Mode {
	case "", ModeThrow, ModeToolResult:
	default:
		return Decision{Verdict: Deny, Reason: ReasonInvalidPolicyResult, PublicReason: fmt.Sprintf("the policy returned an unknown result mode %q", got.Mode)}
	}
	return got
}

// StaticDecider is the simple decider the gateway ships before the policy
// engine: a tool-name allow list and deny list with a default. It is
// read-only after construction and safe for concurrent use.
type StaticDecider struct {
	// Default applies to tools in neither list. Zero means Deny. A carry
	// (see [ActionDescriptor.IsCarry]) in no list is allowed.
	Default Verdict
	// Allow and Deny list tool names; Deny wins when a name is in both.
	Allow, Deny []string
	// Approval lists tools that are held for a human.
	Approval []string
	// Mode is the result mode of non-allow decisions.
	Mode ResultMode
}

func (s *StaticDecider) Decide(_ context.Context, d *ActionDescriptor) (Decision, error) {
	has := func(list []string) bool {
		for _, n := range list {
			if n == d.ToolName || n == d.Upstream+"/"+d.ToolName {
				return true
			}
		}
		return false
	}
	switch {
	case has(s.Deny):
		return Decision{Verdict: Deny, Reason: "tool_denied", PublicReason: fmt.Sprintf("calling %s is not allowed by policy", d.ToolName), Mode: s.Mode, RuleID: "static.deny"}, nil
	case has(s.Approval):
		return Decision{Verdict: RequireApproval, Reason: "approval_required", PublicReason: fmt.Sprintf("calling %s needs a human's approval", d.ToolName), Mode: s.Mode, RuleID: "static.approval"}, nil
	case has(s.Allow):
		return Decision{Verdict: Allow, Reason: "tool_allowed", Mode: s.Mode, RuleID: "static.allow"}, nil
	}
	if d.IsCarry() {
		// As policy: a carry no list names goes on (carry.go).
		return Decision{Verdict: Allow, Reason: "carry_allow", Mode: s.Mode, RuleID: "static.carry"}, nil
	}
	v := s.Default
	if v == "" {
		v = Deny
	}
	return Decision{Verdict: v, Reason: "static_default", PublicReason: fmt.Sprintf("calling %s is not allowed by policy (default %s)", d.ToolName, v), Mode: s.Mode, RuleID: "static.default"}, nil
}

package intercept

import (
	"context"
	"testing"
)

// panickingFilter is a Decider and ToolFilter whose Visible panics.
type panickingFilter struct{}

func (panickingFilter) Decide(context.Context, *ActionDescriptor) (Decision, error) {
	return Decision{Verdict: Deny, Reason: "denied"}, nil
}

func (panickingFilter) Visible(context.Context, *ActionDescriptor) bool { panic("filter broke") }

// TestAttackReadablePanicAllows: a Visible that panicked made Readable
// report the resource readable. A listing's filter keeps what it cannot
// judge, since the call is decided anyway; a subscription is screened
// with Readable alone, and its updates reach the client with nothing
// deciding them after, so a panic leaves the resource out.
func TestAttackReadablePanicAllows(t *testing.T) {
	ic := &Interceptor{Decider: panickingFilter{}}
	if ic.Readable(t.Context(), CallContext{Upstream: "docs"}, "docs://secret") {
		t.Error("Readable reported a resource readable when the filter panicked")
	}
}

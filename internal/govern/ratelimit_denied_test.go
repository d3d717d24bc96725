package govern

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestAttackDeniedCallsDrainSharedLimit (found by an attacker review): a
// bucket no rule keys by principal (a global limit, or one per tool or
// upstream) is every agent's. A call the policy then denied kept the token
// it took there: an agent allowed nothing drained it with calls that never
// reached the upstream (send_email, denied), and every other agent's
// allowed calls were rate_limited. Such a call now gives its shared tokens
// back; its own buckets (by principal) still count its attempts.
func TestAttackDeniedCallsDrainSharedLimit(t *testing.T) {
	hour := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: n, Per: time.Hour, Burst: n} }
	next := &intercept.StaticDecider{Allow: []string{"send_slack"}, Deny: []string{"send_email"}}
	g := &RateGate{Next: next, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "messages", Tool: "send_*", Limit: hour(3)},
		{ID: "per-tool", By: []string{"tool"}, Limit: hour(3)},
		{ID: "per-agent", By: []string{"principal"}, Limit: hour(5)},
	}}
	ctx := context.Background()
	for i := range 5 {
		if dec := intercept.Decide(ctx, g, call("mallory", "u", "send_email")); dec.Verdict != intercept.Deny || dec.Reason == ReasonRateLimited {
			t.Fatalf("mallory's call %d: %s %s, want the policy's deny", i+1, dec.Verdict, dec.Reason)
		}
	}
	// Her own bucket counted every attempt.
	if dec := intercept.Decide(ctx, g, call("mallory", "u", "send_email")); dec.Reason != ReasonRateLimited || dec.RuleID != "per-agent" {
		t.Errorf("mallory's 6th call: %s %s (rule %s), want rate_limited by per-agent", dec.Verdict, dec.Reason, dec.RuleID)
	}
	for i := range 3 {
		if dec := intercept.Decide(ctx, g, call("alice", "u", "send_slack")); dec.Verdict != intercept.Allow {
			t.Errorf("alice's call %d after mallory's denied ones: %s %s (rule %s), want allow", i+1, dec.Verdict, dec.Reason, dec.RuleID)
		}
	}
	if dec := intercept.Decide(ctx, g, call("alice", "u", "send_slack")); dec.Reason != ReasonRateLimited {
		t.Errorf("alice's 4th call: %s %s, want rate_limited (the shared limit counts forwarded calls)", dec.Verdict, dec.Reason)
	}
}

// TestAttackDeniedCallsRefundedToClient (left open by attack84): a bucket
// keyed by client is the address's own, as one keyed by principal is the
// agent's, but a call the policy denied gave its token back as if to a
// shared bucket: an unauthenticated client, renaming itself at each call,
// was never limited by `by: [client]` as long as its calls were denied,
// and each made its events in the audit store. Its denied calls now
// count at its address; another address keeps its own bucket.
func TestAttackDeniedCallsRefundedToClient(t *testing.T) {
	hour := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: n, Per: time.Hour, Burst: n} }
	next := &intercept.StaticDecider{Allow: []string{"send_slack"}, Deny: []string{"send_email"}}
	g := &RateGate{Next: next, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-client", By: []string{"client"}, Limit: hour(3)},
	}}
	mallory := intercept.WithClientAddr(context.Background(), "203.0.113.5")
	anonymous := func(agent string) *intercept.ActionDescriptor { // the name its client gives
		d := call(agent, "u", "send_email")
		d.Principal = nil
		return d
	}
	for i := range 3 {
		if dec := intercept.Decide(mallory, g, anonymous(fmt.Sprintf("m%d", i))); dec.Verdict != intercept.Deny || dec.Reason == ReasonRateLimited {
			t.Fatalf("call %d: %s %s, want the policy's deny", i+1, dec.Verdict, dec.Reason)
		}
	}
	if dec := intercept.Decide(mallory, g, anonymous("m3")); dec.Reason != ReasonRateLimited {
		t.Errorf("the address's 4th denied call, under a fourth name: %s %s, want rate_limited by per-client", dec.Verdict, dec.Reason)
	}
	alice := intercept.WithClientAddr(context.Background(), "198.51.100.7")
	if dec := intercept.Decide(alice, g, call("alice", "u", "send_slack")); dec.Verdict != intercept.Allow {
		t.Errorf("another address's call: %s %s, want allow", dec.Verdict, dec.Reason)
	}
}

// TestAttackDeniedCallsDrainAddressLimit: a bucket keyed by client is the
// address's, which authenticated agents calling from it share (every
// agent on the gateway's host is "loopback"). Since cfa440f a call the
// policy denied kept its token there whoever sent it: bob, allowed
// nothing, drained it with calls that never reached an upstream, and
// alice's allowed calls from the same host were rate_limited, as
// TestAttackDeniedCallsDrainSharedLimit had every agent's for a global
// limit. An authenticated agent's denied calls give the address's token
// back; an unauthenticated one's keep it (TestAttackDeniedCallsRefundedToClient).
func TestAttackDeniedCallsDrainAddressLimit(t *testing.T) {
	hour := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: n, Per: time.Hour, Burst: n} }
	next := &intercept.StaticDecider{Allow: []string{"send_slack"}, Deny: []string{"send_email"}}
	g := &RateGate{Next: next, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-client", By: []string{"client"}, Limit: hour(3)},
	}}
	host := intercept.WithClientAddr(context.Background(), "127.0.0.1")
	for i := range 5 {
		if dec := intercept.Decide(host, g, call("bob", "u", "send_email")); dec.Verdict != intercept.Deny || dec.Reason == ReasonRateLimited {
			t.Fatalf("bob's call %d: %s %s, want the policy's deny", i+1, dec.Verdict, dec.Reason)
		}
	}
	for i := range 3 {
		if dec := intercept.Decide(host, g, call("alice", "u", "send_slack")); dec.Verdict != intercept.Allow {
			t.Errorf("alice's call %d after bob's denied ones: %s %s (rule %s), want allow", i+1, dec.Verdict, dec.Reason, dec.RuleID)
		}
	}
	if dec := intercept.Decide(host, g, call("alice", "u", "send_slack")); dec.Reason != ReasonRateLimited {
		t.Errorf("alice's 4th call: %s %s, want rate_limited (the address's limit counts forwarded calls)", dec.Verdict, dec.Reason)
	}
}

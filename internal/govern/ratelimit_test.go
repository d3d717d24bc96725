package govern

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

type countingDecider struct{ n atomic.Int64 }

func (c *countingDecider) Decide(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
	c.n.Add(1)
	return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
}

// call is a call of the authenticated agent (its buckets are its own; an
// unauthenticated agent's are its client's: bucketOwner).
func call(agent, upstream, tool string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{Method: "tools/call", Agent: agent, Upstream: upstream, ToolName: tool,
		Principal: &intercept.Principal{ID: agent, Method: "api_key"}}
}

func TestRateGate(t *testing.T) {
	next := &countingDecider{}
	hour := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: n, Per: time.Hour, Burst: n} }
	g := &RateGate{Next: next, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-agent", By: []string{"principal"}, Limit: hour(3)},
		{ID: "github-writes", By: []string{"principal"}, Upstream: "github", Tool: "create_*", Limit: hour(1)},
		{ID: "global", Limit: hour(4)},
	}}
	ctx := context.Background()
	decide := func(d *intercept.ActionDescriptor) intercept.Decision { return intercept.Decide(ctx, g, d) }

	if dec := decide(call("alice", "github", "create_issue")); dec.Verdict != intercept.Allow {
		t.Fatalf("first create_issue: %+v", dec)
	}
	dec := decide(call("alice", "github", "create_issue"))
	if dec.Verdict != intercept.Deny || dec.Reason != ReasonRateLimited || dec.RuleID != "github-writes" || dec.Mode != intercept.ModeToolResult || dec.RetryAfter <= 0 {
		t.Fatalf("second create_issue: %+v; want a soft rate_limited deny by github-writes with a retry-after", dec)
	}
	// The tool pattern: another tool of github and the same name elsewhere
	// are not under github-writes.
	if dec := decide(call("alice", "github", "list_issues")); dec.Verdict != intercept.Allow {
		t.Errorf("list_issues: %+v", dec)
	}
	// The refused call gave its per-agent token back: alice's third
	// allowed call uses the last of her 3.
	if dec := decide(call("alice", "gitlab", "create_issue")); dec.Verdict != intercept.Allow {
		t.Errorf("alice's third allowed call: %+v", dec)
	}
	if dec := decide(call("alice", "gitlab", "create_issue")); dec.RuleID != "per-agent" {
		t.Errorf("alice's fourth allowed call: %+v; want per-agent", dec)
	}
	// bob has his own buckets; with alice's three calls they reach the global limit of 4.
	for i := range 1 {
		if dec := decide(call("bob", "gitlab", "create_issue")); dec.Verdict != intercept.Allow {
			t.Fatalf("bob's call %d: %+v", i+1, dec)
		}
	}
	if dec := decide(call("carol", "x", "y")); dec.RuleID != "global" {
		t.Errorf("fifth allowed call overall: %+v; want the global limit", dec)
	}
	// An agent whose name spells another bucket's key does not share it.
	if dec := decide(call("alice|5:alice", "x", "y")); dec.RuleID == "per-agent" {
		t.Errorf("crafted agent name hit alice's bucket: %+v", dec)
	}
	if got := next.n.Load(); got != 4 {
		t.Errorf("the policy was asked %d times, want 4 (only for calls under every limit)", got)
	}
}

type brokenLimiter struct{}

func (brokenLimiter) Take(context.Context, ratelimit.Bucket) (ratelimit.Result, error) {
	return ratelimit.Result{}, errors.New("connection refused")
}

func TestRateGateFailsClosed(t *testing.T) {
	next := &countingDecider{}
	g := &RateGate{Next: next, Limiter: brokenLimiter{}, Rules: []RateRule{{ID: "global", Limit: ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1}}}}
	dec := intercept.Decide(context.Background(), g, call("a", "u", "t"))
	if dec.Verdict != intercept.Deny || dec.Reason != intercept.ReasonPolicyError || next.n.Load() != 0 {
		t.Errorf("limiter error: %+v, policy asked %d times; want policy_error and no policy", dec, next.n.Load())
	}
}

func TestRateLimitedRendering(t *testing.T) {
	b := intercept.RenderDecision([]byte("1"), intercept.Decision{Verdict: intercept.Deny, Reason: ReasonRateLimited, Mode: intercept.ModeToolResult, RetryAfter: 1500 * time.Millisecond}, "tx", "2025-06-18")
	if !strings.Contains(string(b), `"retry_after_ms":1500`) || !strings.Contains(string(b), `"isError":true`) {
		t.Errorf("rendered %s", b)
	}
}

// BenchmarkRateGate is the cost of three local limits per call (issue 13:
// at most 2 µs).
func BenchmarkRateGate(b *testing.B) {
	lim := ratelimit.Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-agent", By: []string{"principal"}, Limit: lim},
		{ID: "per-tool", By: []string{"upstream", "tool"}, Limit: lim},
		{ID: "global", Limit: lim},
	}}
	d := call("alice", "github", "create_issue")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.Decide(ctx, d)
		}
	})
}

// TestRateGateCarries: a carry (a completion, a notification: intercept's
// carry.go) is no call: only a rule naming carries counts it.
func TestRateGateCarries(t *testing.T) {
	one := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "global", Limit: one},
		{ID: "completions", Tool: "mcp:completion/*", Limit: one},
	}}
	ctx := context.Background()
	complete := &intercept.ActionDescriptor{Method: "completion/complete", ToolName: intercept.CarryPrefix + "completion/complete", Upstream: "u", Agent: "a", Parameters: []byte(`{}`)}
	if dec := intercept.Decide(ctx, g, complete); dec.Verdict != intercept.Allow {
		t.Fatalf("first completion: %+v", dec)
	}
	if dec := intercept.Decide(ctx, g, complete); dec.Verdict != intercept.Deny || dec.RuleID != "completions" {
		t.Errorf("second completion: %+v, want denied by completions", dec)
	}
	if dec := intercept.Decide(ctx, g, call("a", "u", "t")); dec.Verdict != intercept.Allow {
		t.Errorf("a call after completions: %+v, want the global token still there", dec)
	}
}

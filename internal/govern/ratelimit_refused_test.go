package govern

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestRateGateRefusedCallsKeepNoTokens (found by an attacker review): an
// agent over its own limit that keeps calling starves only itself. A call
// a later rule refused kept the tokens it took from the rules before, so
// with a global limit listed before a per-agent one, one agent refused by
// its per-agent limit drained the global bucket and every other agent got
// rate_limited.
func TestRateGateRefusedCallsKeepNoTokens(t *testing.T) {
	hour := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: n, Per: time.Hour, Burst: n} }
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "global", Limit: hour(5)},
		{ID: "per-agent", By: []string{"principal"}, Limit: hour(1)},
	}}
	ctx := context.Background()
	for i := range 10 {
		dec := intercept.Decide(ctx, g, call("mallory", "u", "t"))
		if want := i > 0; (dec.Reason == ReasonRateLimited) != want {
			t.Fatalf("mallory's call %d: %+v; want rate_limited %v", i+1, dec, want)
		}
	}
	if dec := intercept.Decide(ctx, g, call("bob", "u", "t")); dec.Verdict != intercept.Allow {
		t.Errorf("bob's first call after mallory's refused ones: %s %s (rule %s), want allow", dec.Verdict, dec.Reason, dec.RuleID)
	}
}

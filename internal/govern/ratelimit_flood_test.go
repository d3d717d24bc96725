package govern

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestRateGateInventedKeys (found by an identity review): an agent under
// a limit keyed by the tool cannot escape it by calling made-up tools
// until its spent bucket is pushed out of the bounded table and comes
// back full. Before, mallory's 10/h on echo gave 30 calls in the hour.
func TestRateGateInventedKeys(t *testing.T) {
	const maxKeys = 50
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{MaxKeys: maxKeys}), Rules: []RateRule{
		{ID: "per-tool", By: []string{"principal", "tool"}, Limit: ratelimit.Limit{Rate: 10, Per: time.Hour, Burst: 10}},
	}}
	ctx := context.Background()
	allowed := 0
	for round := range 3 {
		for range 10 {
			if dec := intercept.Decide(ctx, g, call("mallory", "demo", "echo")); dec.Verdict == intercept.Allow {
				allowed++
			}
		}
		// Each made-up bucket spent too, so that none is full before
		// echo's.
		for i := range 2 * maxKeys {
			for range 10 {
				intercept.Decide(ctx, g, call("mallory", "demo", fmt.Sprintf("made_up_%d_%d", round, i)))
			}
		}
	}
	if allowed != 10 {
		t.Errorf("echo calls allowed in the hour: got %d, want 10 (made-up tools pushed the spent bucket out)", allowed)
	}
}

// TestRateGateFloodStaysWithTheAgent: the limiter refuses the flooding
// agent's new buckets, saying its table is full, with a retry-after; it
// stays bounded; and other agents, also under by: [tool] rules whose
// buckets are shared, keep getting theirs.
func TestRateGateFloodStaysWithTheAgent(t *testing.T) {
	now := time.Unix(1e9, 0)
	lim := ratelimit.NewLocal(ratelimit.LocalOptions{MaxKeys: 100, MaxKeysPerOwner: 20, Now: func() time.Time { return now }})
	hour := ratelimit.Limit{Rate: 10, Per: time.Hour, Burst: 10}
	g := &RateGate{Next: &countingDecider{}, Limiter: lim, Rules: []RateRule{
		{ID: "per-agent-tool", By: []string{"principal", "tool"}, Limit: hour},
		{ID: "per-tool", By: []string{"tool"}, Limit: hour},
	}}
	ctx := context.Background()
	var full intercept.Decision
	for i := range 1000 {
		dec := intercept.Decide(ctx, g, call("mallory", "demo", fmt.Sprintf("made_up_%d", i)))
		if dec.Verdict != intercept.Allow && full.Reason == "" {
			full = dec
		}
	}
	if full.Reason != ReasonRateLimited || full.RetryAfter <= 0 || !strings.Contains(full.PublicReason, "table is full") {
		t.Errorf("mallory's made-up call past her share: %s %s %q retry after %s; want rate_limited saying the table is full, with a retry-after", full.Verdict, full.Reason, full.PublicReason, full.RetryAfter)
	}
	if n := lim.Len(); n > 20 {
		t.Errorf("the limiter holds %d buckets after mallory's flood, want at most her share of 20", n)
	}
	for _, tool := range []string{"echo", "made_up_999", "search"} {
		if dec := intercept.Decide(ctx, g, call("bob", "demo", tool)); dec.Verdict != intercept.Allow {
			t.Errorf("bob's %s after mallory's flood: %s %s %q, want allow", tool, dec.Verdict, dec.Reason, dec.PublicReason)
		}
	}
	// An hour on, mallory's buckets are full again: they are dropped to
	// make room, and her calls go through.
	now = now.Add(time.Hour)
	if dec := intercept.Decide(ctx, g, call("mallory", "demo", "echo")); dec.Verdict != intercept.Allow {
		t.Errorf("mallory an hour later: %s %s %q, want allow", dec.Verdict, dec.Reason, dec.PublicReason)
	}
}

// BenchmarkRateGateFlood is the cost of a call that needs a new bucket
// when its agent's share is full of spent ones: refused with the table
// full, without a walk over the share.
func BenchmarkRateGateFlood(b *testing.B) {
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-tool", By: []string{"principal", "tool"}, Limit: ratelimit.Limit{Rate: 10, Per: time.Hour, Burst: 10}},
	}}
	ctx := context.Background()
	names := make([]*intercept.ActionDescriptor, 4096)
	for i := range names {
		names[i] = call("mallory", "demo", fmt.Sprint("made_up_", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		g.Decide(ctx, names[i%len(names)])
	}
}

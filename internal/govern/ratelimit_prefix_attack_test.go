package govern

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestAttackRateLimitReadPrefixNeverMatches: a rate rule's tool pattern
// is put in policy's normal form for reads, and that form's URI
// serialisation escapes a * in a path: the documented
// "resource:file:///srv/*" (every read under /srv) became
// "resource:file:///srv/%2A", which no read's name matches, so the limit
// never applied and every read under /srv went through unlimited. A final
// * is a prefix, normalised as tool_classes' prefixes are.
func TestAttackRateLimitReadPrefixNeverMatches(t *testing.T) {
	hour := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	ctx := context.Background()
	for _, c := range []struct{ pattern, first, second string }{
		{"resource:file:///srv/*", "file:///srv/a.txt", "file:///srv/b/c.txt"},
		{"resource:file:///srv/secret*", "file:///srv/secret/a", "file:///srv/secrets.txt"},
		{"resource:https://intranet.example/*", "https://intranet.example/a", "https://INTRANET.example:443/b"},
		{"resource:https://intranet.example/payroll/*", "https://intranet.example/payroll/a", "https://intranet.example/x/../payroll/b"},
	} {
		g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
			{ID: "reads", By: []string{"principal"}, Tool: c.pattern, Limit: hour},
		}}
		intercept.Decide(ctx, g, read("alice", "fs", c.first))
		if dec := intercept.Decide(ctx, g, read("alice", "fs", c.second)); dec.Reason != ReasonRateLimited {
			t.Errorf("tool %q: a second read (%s) under 1/h: %s (%s); want rate_limited", c.pattern, c.second, dec.Verdict, dec.Reason)
		}
	}
	// Outside the prefix: not counted.
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "reads", By: []string{"principal"}, Tool: "resource:file:///srv/*", Limit: hour},
	}}
	intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/a"))
	if dec := intercept.Decide(ctx, g, read("alice", "fs", "file:///etc/srv/a")); dec.Verdict != intercept.Allow {
		t.Errorf("a read outside /srv after one under it: %s (%s); want allow", dec.Verdict, dec.Reason)
	}
}

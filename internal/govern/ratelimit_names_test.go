package govern

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/ratelimit"
)

func read(agent, upstream, uri string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{Method: "resources/read", Agent: agent, Upstream: upstream, ToolName: intercept.ResourcePrefix + uri}
}

// TestRateGateReadNames (found by an attacker review): a limit on resource reads cannot be dodged by the
// way the URI is spelled. Policy compares reads in a normal form (scheme
// and host lower-cased, percent-encoding decoded, dot segments removed:
// policy/reads.go); a rate rule must count the same read the same way, and
// a "resource:*" (or "*") pattern, documented to match all, must match a
// URI with slashes in it.
func TestRateGateReadNames(t *testing.T) {
	hour := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	ctx := context.Background()

	// 1. A glob over every read.
	for _, pattern := range []string{"resource:*", "*"} {
		g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
			{ID: "reads", By: []string{"principal"}, Tool: pattern, Limit: hour},
		}}
		intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/a.txt"))
		if dec := intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/b.txt")); dec.Reason != ReasonRateLimited {
			t.Errorf("tool %q, second read under 1/h: %s; want rate_limited", pattern, dec.Verdict)
		}
	}

	// 2. An exact read, reached by another spelling of the same URI.
	for _, variant := range []string{
		"file:///srv/public/../secret/key",
		"FILE:///srv/secret/key",
		"file:///srv/%73ecret/key",
		"file:///srv/./secret/key",
	} {
		g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
			{ID: "secret", By: []string{"principal"}, Tool: "resource:file:///srv/secret/key", Limit: hour},
		}}
		intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/secret/key"))
		if dec := intercept.Decide(ctx, g, read("alice", "fs", variant)); dec.Reason != ReasonRateLimited {
			t.Errorf("read of %s after file:///srv/secret/key under 1/h: %s; want rate_limited", variant, dec.Verdict)
		}
	}

	// 3. A per-tool bucket, split by spelling.
	g := &RateGate{Next: &countingDecider{}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []RateRule{
		{ID: "per-read", By: []string{"principal", "tool"}, Limit: hour},
	}}
	intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/secret/key"))
	if dec := intercept.Decide(ctx, g, read("alice", "fs", "file:///srv/x/../secret/key")); dec.Reason != ReasonRateLimited {
		t.Errorf("by [principal, tool]: the same read spelled with a dot segment: %s; want rate_limited", dec.Verdict)
	}
}

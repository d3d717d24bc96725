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

// keySizes is a Limiter that remembers the longest bucket key and owner
// it was asked for.
type keySizes struct {
	ratelimit.Limiter
	key, owner int
}

func (k *keySizes) Take(ctx context.Context, b ratelimit.Bucket) (ratelimit.Result, error) {
	k.key, k.owner = max(k.key, len(b.Key)), max(k.owner, len(b.Owner))
	return k.Limiter.Take(ctx, b)
}

// TestAttackRateLimitLongNames (attacker review): a bucket is made for a
// call before the policy sees it, named by the call's tool (by: [tool])
// and agent (by: [principal]) as the client wrote them, and a request may
// hold a name of max_body_bytes (4 MiB). An agent calling made-up tools
// with 4 MiB names had the in-process limiter hold 4 MiB a bucket, 4 GiB
// for its thousand (max_keys_per_agent), the next client as much again,
// and Redis likewise. A name past a few hundred bytes is in a bucket's key
// as its SHA-256; each name still has its own bucket.
func TestAttackRateLimitLongNames(t *testing.T) {
	hour := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	sizes := &keySizes{Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{})}
	g := &RateGate{Next: &countingDecider{}, Limiter: sizes, Rules: []RateRule{
		{ID: "per-tool", By: []string{"principal", "tool"}, Limit: hour},
	}}
	ctx := context.Background()
	long := strings.Repeat("x", 1<<20)
	for i := range 3 {
		name := fmt.Sprintf("%s%d", long, i)
		// Unauthenticated: the agent's name is the client's to give too.
		d := &intercept.ActionDescriptor{Method: "tools/call", Agent: "mallory" + long, Upstream: "u", ToolName: name}
		if dec := intercept.Decide(ctx, g, d); dec.Verdict != intercept.Allow {
			t.Fatalf("first call of made-up tool %d: %s %s; want allow (a bucket of its own)", i, dec.Verdict, dec.Reason)
		}
		d = &intercept.ActionDescriptor{Method: "tools/call", Agent: "mallory" + long, Upstream: "u", ToolName: name}
		if dec := intercept.Decide(ctx, g, d); dec.Reason != ReasonRateLimited {
			t.Fatalf("second call of made-up tool %d under 1/h: %s %s; want rate_limited", i, dec.Verdict, dec.Reason)
		}
	}
	if sizes.key > 1024 || sizes.owner > 1024 {
		t.Errorf("a bucket's key is %d bytes and its owner %d for 1 MiB names; want them bounded", sizes.key, sizes.owner)
	}
}

package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// closer closes upstream web (intercept.RouteCloser).
type closer struct{ countingDecider }

func (*closer) Closes(_ context.Context, d *intercept.ActionDescriptor) bool {
	return d.Upstream == "web"
}

// TestChainCloses: the gates `sluice run` puts around the policy pass on
// its answer to whether an upstream is closed to a client: a gate that
// swallowed it would send a closed upstream the client's headers.
func TestChainCloses(t *testing.T) {
	var d intercept.Decider = &Advisor{Policy: &closer{}}
	d = &approval.Gate{Next: &DriftGate{Next: d}}
	d = &RateGate{Next: d}
	d = &AuditGate{Next: d}
	rc, ok := d.(intercept.RouteCloser)
	if !ok {
		t.Fatal("the chain is not a RouteCloser")
	}
	ctx := context.Background()
	if !rc.Closes(ctx, &intercept.ActionDescriptor{Upstream: "web"}) {
		t.Error("web: Closes got false through the chain, want true")
	}
	if rc.Closes(ctx, &intercept.ActionDescriptor{Upstream: "docs"}) {
		t.Error("docs: Closes got true through the chain, want false")
	}
	if (&AuditGate{Next: &countingDecider{}}).Closes(ctx, &intercept.ActionDescriptor{Upstream: "web"}) {
		t.Error("a Decider that cannot tell: Closes got true, want false")
	}
}

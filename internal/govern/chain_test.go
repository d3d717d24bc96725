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

// linker records the sessions it is told of (intercept.SessionLinker).
type linker struct {
	countingDecider
	sessions []string
}

func (l *linker) LinkSession(_ context.Context, _ *intercept.ActionDescriptor, session string) error {
	l.sessions = append(l.sessions, session)
	return nil
}

// TestChainLinksSession: the gates `sluice run` puts around the policy
// pass on the session an allowed A2A message turned out to start: a gate
// that swallowed it would leave a conversation's first turn out of its
// session's route memory.
func TestChainLinksSession(t *testing.T) {
	l := &linker{}
	var d intercept.Decider = &Advisor{Policy: l}
	d = &approval.Gate{Next: &DriftGate{Next: d}}
	d = &RateGate{Next: d}
	d = &AuditGate{Next: d}
	ic := &intercept.Interceptor{Decider: d}
	if err := ic.LinkSession(context.Background(), &intercept.ActionDescriptor{}, "c1"); err != nil {
		t.Fatal(err)
	}
	if len(l.sessions) != 1 || l.sessions[0] != "c1" {
		t.Errorf("the policy was told of sessions %q, want [c1]", l.sessions)
	}
}

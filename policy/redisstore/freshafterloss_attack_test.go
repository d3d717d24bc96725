package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackReplicaStartedAfterLossSeesIt: Redis restarts without
// persistence while replica A runs (a node that went down with Redis and
// one replica), and the replica that comes back, B, with no epoch file
// (a new pod), starts before A next looks: B finds no epoch key and
// writes a fresh one. A, at its next lookup, takes the changed epoch for
// the loss it is and denies the sinks whose window reaches back past it;
// B took Redis as new and let the same agent's sink through, a source
// read through A before the restart forgotten. A replica that sees
// another's fresh epoch replace its own now marks it lost for all.
func TestAttackReplicaStartedAfterLossSeesIt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	a, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	if err := a.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(-time.Hour)
	if err := a.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
		t.Errorf("A, after the loss: %v, want ErrEvicted", err)
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
		t.Errorf("B, started after the loss, once A saw it: %v %v, want ErrEvicted", seen, err)
	}
	// A replica started later still finds it lost.
	c, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
		t.Errorf("C, started later: %v, want ErrEvicted", err)
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, time.Now().Add(time.Second)); seen || err != nil {
		t.Errorf("B, a window starting after the loss: %v %v, want not seen", seen, err)
	}
}

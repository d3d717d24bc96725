package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/redisstore"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackDeletedSessionHeldCallOtherReplica: a client that ended its
// session (DELETE) while a call of it was held for approval has the call
// cancelled and its request withdrawn (TestAttackDeletedSessionHeldCallRuns),
// but only on the replica holding it: replicas share session keys and
// Redis, so the DELETE may reach replica B while replica A holds the call.
// B ended the session (upstream, and its route memory) and left A's call
// held and its approval request pending; an operator's approval then ran
// it upstream, decided against route memory the DELETE had dropped. Now
// B marks the session ended in the shared store, which cancels every
// call of it held on any replica, and withdraws their approval requests,
// as for a cancellation through B (TestAttackCancelledHeldCallOtherReplica):
// A's hold ends unanswered, and nothing reaches the upstream. With
// approvals kept per replica, A's approval finds the call cancelled.
func TestAttackDeletedSessionHeldCallOtherReplica(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       Options
		perReplica bool
	}{
		{"approvals in redis", Options{}, false},
		{"approvals in redis, virtual server", Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}, false},
		{"approvals per replica", Options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			approvals := redisApprovals(t, srv)
			if tc.perReplica {
				approvals = func(int) *approval.Store { return approval.NewStore(approval.Options{}) }
			}
			h := holdingReplicasWith(t, tc.opts, sharedStore(t, srv), approvals)
			hdr, rd, _ := h.holdOnA(t)
			if status := deleteSession(t, h.urls[1], hdr); status/100 != 2 {
				t.Fatalf("DELETE through B: got %d, want the session ended", status)
			}
			// An operator approves the call (or tries to): through B's
			// admin API, or A's where only A knows the request.
			admin := h.approvals[1]
			if tc.perReplica {
				admin = h.approvals[0]
			}
			if rs := admin.List(); len(rs) == 1 && rs[0].Status == approval.Pending {
				_, _ = admin.Decide(rs[0].ID, true, "operator")
			}
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				if strings.Contains(string(ev.Data), `"result":{"content"`) {
					t.Errorf("A answered the held call of a session ended through B: %s", ev.Data)
				}
			}
			if h.upstreamSaw(`"name":"add"`) {
				t.Fatalf("the held call of a session its client ended through B ran upstream after an operator approved it")
			}
			if !tc.perReplica {
				checkWithdrawn(t, h.approvals[0])
			}
		})
	}
}

// TestDeleteHeldOtherReplicaStoreDown: fail closed. A DELETE through B
// whose shared store does not answer (a stalled Redis) cannot cancel the
// calls held on other replicas: it is refused with 503 saying the session
// was not ended, within the store's timeout, and ends nothing; the call
// stays held on A, and a DELETE through A then ends the session and
// withdraws it.
func TestDeleteHeldOtherReplicaStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	h := holdingReplicas(t, sharedStore(t, srv), redisApprovals(t, srv))
	hdr, rd, q := h.holdOnA(t)

	// B, on a Redis that stalled.
	stalled := redis.NewClient(&redis.Options{Addr: stalledRedis(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { stalled.Close() })
	b := h.start(t, redisstore.New(stalled, redisstore.Options{Timeout: 300 * time.Millisecond}), h.approvals[1])
	start := time.Now()
	if status := deleteSession(t, b, hdr); status != http.StatusServiceUnavailable {
		t.Errorf("DELETE through B, its Redis stalled: got %d, want 503", status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refused DELETE took %v, want it bounded by the store's timeout", d)
	}
	if req := onlyRequest(t, h.approvals[0]); req.Status != approval.Pending {
		t.Fatalf("the held call after a DELETE B could not take: %s, want pending", req.Status)
	}
	if status := deleteSession(t, h.urls[0], hdr); status/100 != 2 {
		t.Fatalf("DELETE through A: got %d, want the session ended", status)
	}
	checkEndedUnanswered(t, rd, q)
	checkWithdrawn(t, h.approvals[0])
}

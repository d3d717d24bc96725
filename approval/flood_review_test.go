package approval

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// The tests in this file were written by a flood/robustness review; each
// failed on the code it was written against.

// TestPendingFloodSlowsEveryApproval: nothing bounds the pending requests
// one agent can create: every distinct call a require_approval rule holds
// adds a live request, with its arguments, for approvals.timeout (15m).
// With the store in approvals.db (serve's default) every operation —
// each held call's Decide, each Wait poll (every 250 ms per waiting
// call), each operator answer — reads every row back, JSON-decodes it
// with its arguments and encodes them all again to find what changed,
// under the store's one mutex. So one agent holding a few thousand calls
// with 4 KiB of arguments each (its own cost grows quadratically, but it
// needs only minutes) makes every other agent's held call and every
// operator approval take as long as reading them all; calls stall for
// everyone. A flood of held calls should be refused beyond a bound (per
// agent, stated, counted, denied with a reason), and one held call should
// not cost work proportional to every request held.
func TestPendingFloodSlowsEveryApproval(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "approvals.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := &Gate{Next: holdPay, Store: s}
	ctx := context.Background()
	big := strings.Repeat("x", 4<<10)
	flood := func(i int) intercept.Decision {
		return intercept.Decide(ctx, g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "mallory",
			Parameters: jsontext.Value(fmt.Sprintf(`{"amount":%d,"memo":%q}`, i, big))})
	}
	// The cheapest of five held calls of other agents, each distinct.
	honest := func(round int) time.Duration {
		best := time.Hour
		for i := range 5 {
			d := &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: fmt.Sprintf("honest-%d-%d", round, i),
				Parameters: jsontext.Value(`{"amount":5,"to":"x"}`)}
			t0 := time.Now()
			dec := intercept.Decide(ctx, g, d)
			best = min(best, time.Since(t0))
			if dec.Verdict != intercept.RequireApproval {
				t.Fatalf("honest call: %s %s", dec.Verdict, dec.Reason)
			}
		}
		return best
	}
	n := 0
	for ; n < 50; n++ {
		if d := flood(n); d.Verdict == intercept.Allow {
			t.Fatalf("flood call %d was allowed", n)
		}
	}
	before := honest(0)
	// The flood goes on, for at most 15 s.
	start := time.Now()
	for ; n < 600 && time.Since(start) < 15*time.Second; n++ {
		if d := flood(n); d.Verdict == intercept.Allow {
			t.Fatalf("flood call %d was allowed", n)
		}
	}
	if d := flood(n); d.Verdict != intercept.Deny || d.Reason != ReasonTooMany {
		t.Errorf("a held call past the agent's bound: %s %s, want deny %s", d.Verdict, d.Reason, ReasonTooMany)
	}
	after := honest(1)
	t.Logf("%d held calls of one agent (%d live); another agent's held call took %v at 50, %v after", n, s.Len(), before, after)
	// What keeps the others' calls quick is the bound on what one agent
	// holds: asserted on the count, not on a time a loaded machine sets.
	if live := s.Len(); live > MaxPendingPerAgent+10 {
		t.Fatalf("after one agent held %d distinct calls, %d are live: nothing bounds how many one agent holds", n, live)
	}
}

package approval

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackHeldCallsBytesBounded: a held call keeps its arguments (and
// what else it sends) in the store until answered, and the bounds were
// counts: an agent's 100, a client address's 1,000, the store's 10,000
// calls of up to max_body_bytes (4 MiB) each — 4 GiB for one address,
// 40 GiB for the gateway, in memory (or Redis). The bytes are bounded
// too: MaxLiveBytes for the store, a tenth of it for an agent and for
// an address's unauthenticated calls; a call past one is denied
// approval_limit, saying so, and others are still held.
func TestAttackHeldCallsBytesBounded(t *testing.T) {
	s := NewStore(Options{MaxLiveBytes: 10 << 20}) // 1 MiB an agent or address
	g := &Gate{Next: holdPay, Store: s}
	big := func(i int) jsontext.Value {
		return jsontext.Value(fmt.Sprintf(`{"amount":%d,"memo":"%s"}`, i, strings.Repeat("x", 300<<10)))
	}
	call := func(ctx context.Context, agent string, i int, p *intercept.Principal) intercept.Decision {
		return intercept.Decide(ctx, g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank",
			Agent: agent, Principal: p, Parameters: big(i)})
	}
	alice := &intercept.Principal{ID: "alice"}
	for i := range 3 {
		if dec := call(context.Background(), "alice", i, alice); dec.Verdict != intercept.RequireApproval {
			t.Fatalf("alice's call %d of 300 KiB: got %s %s, want it held", i, dec.Verdict, dec.Reason)
		}
	}
	dec := call(context.Background(), "alice", 3, alice)
	if dec.Verdict != intercept.Deny || dec.Reason != ReasonTooMany || !strings.Contains(dec.PublicReason, "bytes") {
		t.Errorf("alice's 4th call of 300 KiB (1.2 MiB held): got %s %s %q, want deny %s naming the bytes", dec.Verdict, dec.Reason, dec.PublicReason, ReasonTooMany)
	}
	if dec := call(context.Background(), "bob", 4, &intercept.Principal{ID: "bob"}); dec.Verdict != intercept.RequireApproval {
		t.Errorf("bob's call: got %s %s, want it held", dec.Verdict, dec.Reason)
	}
	// Unauthenticated names from one address share its tenth.
	from := intercept.WithClientAddr(context.Background(), "192.0.2.1")
	for i := range 3 {
		if dec := call(from, fmt.Sprintf("anon-%d", i), 10+i, nil); dec.Verdict != intercept.RequireApproval {
			t.Fatalf("unauthenticated call %d: got %s %s, want it held", i, dec.Verdict, dec.Reason)
		}
	}
	if dec := call(from, "anon-new", 20, nil); dec.Reason != ReasonTooMany {
		t.Errorf("a 4th unauthenticated call of 300 KiB from 192.0.2.1 under a new name: got %s %s, want %s", dec.Verdict, dec.Reason, ReasonTooMany)
	}
	// The store's bound: agents of their own, each under its tenth,
	// fill it.
	held := 0
	for i := range 40 {
		p := &intercept.Principal{ID: fmt.Sprintf("agent-%d", i)}
		if dec := call(context.Background(), p.ID, 100+i, p); dec.Verdict == intercept.RequireApproval {
			held++
		} else if dec.Reason != ReasonTooMany {
			t.Fatalf("agent-%d: got %s %s", i, dec.Verdict, dec.Reason)
		}
	}
	if total := 3 + 1 + 3 + held; total > 34 {
		t.Errorf("%d calls of 300 KiB held, more than 10 MiB's worth", total)
	}
	if held == 0 {
		t.Error("no other agent's call was held")
	}
}

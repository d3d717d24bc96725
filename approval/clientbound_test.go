package approval

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestClientAddressBound: the unauthenticated calls of one client address
// hold at most a tenth of the store whatever agent names they give; an
// authenticated agent is counted by its proven name only, and calls
// without an address (stdio) by their agent.
func TestClientAddressBound(t *testing.T) {
	s := NewStore(Options{MaxLive: 30})
	g := &Gate{Next: holdPay, Store: s}
	call := func(ctx context.Context, agent string, i int, p *intercept.Principal) intercept.Decision {
		return intercept.Decide(ctx, g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank",
			Agent: agent, Principal: p, Parameters: jsontext.Value(fmt.Sprintf(`{"amount":%d}`, i))})
	}
	from := intercept.WithClientAddr(context.Background(), "192.0.2.1")
	for i := range 3 {
		if dec := call(from, fmt.Sprintf("anon-%d", i), i, nil); dec.Verdict != intercept.RequireApproval {
			t.Fatalf("unauthenticated call %d of 3: got %s %s, want it held", i, dec.Verdict, dec.Reason)
		}
	}
	dec := call(from, "anon-new", 3, nil)
	if dec.Reason != ReasonTooMany {
		t.Errorf("a 4th unauthenticated call from 192.0.2.1 under a new name: got %s %s, want %s", dec.Verdict, dec.Reason, ReasonTooMany)
	}
	if dec := call(from, "bob", 4, &intercept.Principal{ID: "bob"}); dec.Verdict != intercept.RequireApproval {
		t.Errorf("an authenticated agent at 192.0.2.1: got %s %s, want it held", dec.Verdict, dec.Reason)
	}
	if dec := call(intercept.WithClientAddr(context.Background(), "192.0.2.2"), "anon-new", 5, nil); dec.Verdict != intercept.RequireApproval {
		t.Errorf("a call from another address: got %s %s, want it held", dec.Verdict, dec.Reason)
	}
	if dec := call(context.Background(), "stdio-agent", 6, nil); dec.Verdict != intercept.RequireApproval {
		t.Errorf("a call with no address: got %s %s, want it held", dec.Verdict, dec.Reason)
	}
	clients := map[string]string{}
	for _, r := range s.List() {
		clients[r.Agent] = r.Client
	}
	if clients["anon-0"] != "192.0.2.1" || clients["bob"] != "" {
		t.Errorf("recorded clients: got %v, want anon-0 at 192.0.2.1 and bob (authenticated) at none", clients)
	}
}

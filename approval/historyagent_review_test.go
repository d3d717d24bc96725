package approval

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackHistoryKeepsAgentNamesBounded: without auth an agent is the
// name its client gives, as long as a request, and it withdraws its own
// held calls by cancelling them, no operator needed. Each withdrawn call
// stayed in the history (the last 100) with its agent's name whole, the
// name again in DecidedBy ("mcp-cancel:" + agent) and a third time in
// its call's key: 100 cancelled calls of a 4 MiB name kept 1.2 GB, in
// memory and the approvals file. The history keeps them cut, as it keeps
// the tool's.
func TestAttackHistoryKeepsAgentNamesBounded(t *testing.T) {
	s := NewStore(Options{})
	g := &Gate{Next: holdEvery, Store: s}
	agent := "mallory" + strings.Repeat("m", 1<<20)
	var ids []string
	for i := range 3 {
		d := intercept.Decide(context.Background(), g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "send",
			Upstream: "bank", Agent: agent, Parameters: jsontext.Value(fmt.Sprintf(`{"n":%d}`, i))})
		if d.Verdict != intercept.RequireApproval {
			t.Fatalf("call %d: %s %s", i, d.Verdict, d.Reason)
		}
		ids = append(ids, d.ApprovalID)
	}
	for _, id := range ids {
		if _, err := s.Withdraw(id, "mcp-cancel:"+agent); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		r, err := s.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != Withdrawn || len(r.Agent) > 1024 || len(r.DecidedBy) > 1024 {
			t.Errorf("withdrawn request %s: status %s, agent %d bytes, decided_by %d bytes; want the names kept cut", id, r.Status, len(r.Agent), len(r.DecidedBy))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.byCall {
		if len(k) > 1024 {
			t.Errorf("a call's key of %d bytes is kept", len(k))
		}
	}
}

// TestLongAgentHistoryStillAnswers: an agent with a long name whose call
// was declined is told so when it sends the call again, as any agent is,
// in this process and in one that opens the approvals file afterwards:
// its name cut in the history does not lose the link to its call.
func TestLongAgentHistoryStillAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := OpenStore(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	agent := "mallory" + strings.Repeat("m", 4<<10)
	call := func(g *Gate, n int) intercept.Decision {
		return intercept.Decide(context.Background(), g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "send",
			Upstream: "bank", Agent: agent, Parameters: jsontext.Value(fmt.Sprintf(`{"n":%d}`, n))})
	}
	g := &Gate{Next: holdEvery, Store: s}
	for n := range 2 {
		d := call(g, n)
		if d.Verdict != intercept.RequireApproval {
			t.Fatalf("call %d: %s %s", n, d.Verdict, d.Reason)
		}
		if _, err := s.Decide(d.ApprovalID, false, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if d := call(g, 0); d.Verdict != intercept.Deny || d.Reason != ReasonDeclined {
		t.Errorf("the declined call sent again: %s %s, want deny %s", d.Verdict, d.Reason, ReasonDeclined)
	}
	// Another process on the same file.
	s2, err := OpenStore(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if d := call(&Gate{Next: holdEvery, Store: s2}, 1); d.Verdict != intercept.Deny || d.Reason != ReasonDeclined {
		t.Errorf("the other declined call sent again to another process: %s %s, want deny %s", d.Verdict, d.Reason, ReasonDeclined)
	}
	// Another agent is not this one, however it is named.
	for _, other := range []string{agent[:len(agent)-1], agent[:maxHistoryName]} {
		d := intercept.Decide(context.Background(), &Gate{Next: holdEvery, Store: s2}, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "send",
			Upstream: "bank", Agent: other, Parameters: jsontext.Value(`{"n":1}`)})
		if d.Verdict != intercept.RequireApproval {
			t.Errorf("another agent (%d bytes) sending the declined call: %s %s, want it held", len(other), d.Verdict, d.Reason)
		}
	}
}

var holdEvery = intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
	return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "upstream_requires_approval"}, nil
})

// TestLongAgentUsedApprovalGoesOn: a used approval of an agent with a
// long name, kept cut once used, still lets that agent's retry answering
// its upstream's question go on, and not another agent's whose name
// differs past the cut.
func TestLongAgentUsedApprovalGoesOn(t *testing.T) {
	ctx := context.Background()
	s := NewStore(Options{})
	g := &Gate{Next: holdPay, Store: s}
	agent := "mallory" + strings.Repeat("m", 4<<10)
	longCall := func(agent, state, extra string) *intercept.ActionDescriptor {
		d := call(`{"amount":5}`)
		d.Agent, d.UpstreamState, d.CallExtra = agent, state, jsontext.Value(extra)
		return d
	}
	d := intercept.Decide(ctx, g, longCall(agent, "", ""))
	if _, err := s.Decide(d.ApprovalID, true, "ops"); err != nil {
		t.Fatal(err)
	}
	c := longCall(agent, "", "")
	if d = intercept.Decide(ctx, g, c); d.Verdict != intercept.Allow || g.Forwarded(ctx, c, d) != nil {
		t.Fatalf("approved call: got %s %s", d.Verdict, d.Reason)
	}
	g.UpstreamAsked(ctx, d.ApprovalID, "s1")
	if r, _ := s.Get(d.ApprovalID); r.Status != Used || len(r.Agent) > 1024 {
		t.Fatalf("used approval: status %s, agent %d bytes", r.Status, len(r.Agent))
	}
	if d := intercept.Decide(ctx, g, longCall(agent[:len(agent)-1]+"x", "s1", answers)); d.Verdict != intercept.RequireApproval {
		t.Errorf("another agent's retry: %s %s, want held", d.Verdict, d.Reason)
	}
	if d := intercept.Decide(ctx, g, longCall(agent, "s1", answers)); d.Verdict != intercept.Allow || d.Reason != ReasonContinued {
		t.Errorf("the agent's retry answering its upstream: %s %s, want allow %s", d.Verdict, d.Reason, ReasonContinued)
	}
}

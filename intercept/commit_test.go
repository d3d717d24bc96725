package intercept

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// committing is a Decider that allows every tool but "deny" and records
// what it was told was forwarded; fail makes Forwarded fail.
type committing struct {
	fail error

	mu        sync.Mutex
	forwarded []string
	decided   []string // verdicts OnDecision heard, for the order of events
}

func (c *committing) Decide(_ context.Context, d *ActionDescriptor) (Decision, error) {
	if d.ToolName == "deny" {
		return Decision{Verdict: Deny, Reason: "no"}, nil
	}
	return Decision{Verdict: Allow, Reason: "yes"}, nil
}

func (c *committing) Forwarded(_ context.Context, d *ActionDescriptor, _ Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forwarded = append(c.forwarded, d.ToolName)
	return c.fail
}

func call(t *testing.T, id, tool string) *Message {
	t.Helper()
	m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCommitFailureDenies(t *testing.T) {
	c := &committing{fail: errors.New("redis: i/o timeout")}
	ic := &Interceptor{Decider: c, OnDecision: func(_ *ActionDescriptor, d Decision) { c.decided = append(c.decided, string(d.Verdict)+"/"+d.Reason) }}
	dec, reply, ok := ic.CheckDecision(context.Background(), call(t, "1", "read"), CallContext{})
	if ok || dec.Verdict != Deny || dec.Reason != ReasonPolicyError {
		t.Fatalf("a call whose commit failed: got ok=%v %s/%s, want a policy_error deny", ok, dec.Verdict, dec.Reason)
	}
	if !strings.Contains(string(reply), "could not be recorded") || !strings.Contains(string(reply), "redis: i/o timeout") {
		t.Errorf("reply does not say why: %s", reply)
	}
	if got := strings.Join(c.decided, ","); got != "deny/policy_error" {
		t.Errorf("OnDecision heard %s, want only the final deny/policy_error", got)
	}
}

func TestForwardedPanicDenies(t *testing.T) {
	ic := &Interceptor{Decider: panicky{}}
	if _, _, ok := ic.CheckDecision(context.Background(), call(t, "1", "read"), CallContext{}); ok {
		t.Fatal("a panicking Forwarded let the call through")
	}
}

type panicky struct{}

func (panicky) Decide(context.Context, *ActionDescriptor) (Decision, error) {
	return Decision{Verdict: Allow, Reason: "yes"}, nil
}
func (panicky) Forwarded(context.Context, *ActionDescriptor, Decision) error { panic("boom") }

func TestCheckBatchCommitsOnlyWhole(t *testing.T) {
	c := &committing{}
	ic := &Interceptor{Decider: c}
	ctx := context.Background()
	reply, ok := ic.CheckBatch(ctx, []*Message{call(t, "1", "read"), call(t, "2", "deny")}, CallContext{})
	if ok || len(c.forwarded) != 0 {
		t.Fatalf("refused batch: ok=%v, committed %v; want nothing committed", ok, c.forwarded)
	}
	if !strings.Contains(string(reply), "another call in the same batch") {
		t.Errorf("reply does not explain the allowed call's refusal: %s", reply)
	}
	if _, ok := ic.CheckBatch(ctx, []*Message{call(t, "1", "read"), call(t, "2", "write")}, CallContext{}); !ok || strings.Join(c.forwarded, ",") != "read,write" {
		t.Fatalf("allowed batch: ok=%v, committed %v; want both", ok, c.forwarded)
	}
}

func TestCallNotificationRefused(t *testing.T) {
	c := &committing{}
	ic := &Interceptor{Decider: c}
	m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read"}}`))
	if err != nil {
		t.Fatal(err)
	}
	reply, ok := ic.Check(context.Background(), m, CallContext{})
	if ok || !strings.Contains(string(reply), "sent as a notification") || len(c.forwarded) != 0 {
		t.Fatalf("tools/call notification: ok=%v reply=%s committed=%v; want refused", ok, reply, c.forwarded)
	}
	if _, ok := ic.CheckBatch(context.Background(), []*Message{call(t, "1", "read"), m}, CallContext{}); ok {
		t.Fatal("a tools/call notification rode along in a batch")
	}
}

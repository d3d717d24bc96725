package govern

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/intercept"
)

// traced is a Decider and ForwardObserver that appends what it is asked
// to a trace.
type traced struct {
	trace *[]string
	dec   intercept.Decision
	fwd   error
}

func (t traced) Decide(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
	*t.trace = append(*t.trace, "decide")
	return t.dec, nil
}

func (t traced) Forwarded(context.Context, *intercept.ActionDescriptor, intercept.Decision) error {
	*t.trace = append(*t.trace, "next.forwarded")
	return t.fwd
}

func TestAuditGate(t *testing.T) {
	allow := intercept.Decision{Verdict: intercept.Allow, Reason: "tool_allowed"}
	diskFull := errors.New("database or disk is full")
	tests := []struct {
		name       string
		err        error // the store's Err
		deny       bool  // on_failure: deny
		record     bool  // sync: commit
		recordErr  error
		nextFwdErr error
		// want
		reason  string // of the decision
		forward bool   // the call reaches the upstream
		trace   []string
	}{
		{name: "healthy deny mode", deny: true, reason: "tool_allowed", forward: true, trace: []string{"decide", "next.forwarded"}},
		{name: "failing deny mode refuses", err: diskFull, deny: true, reason: ReasonAuditUnavailable, trace: nil},
		{name: "failing warn mode lets through", err: diskFull, reason: "tool_allowed", forward: true, trace: []string{"decide", "next.forwarded"}},
		{name: "commit records after next", record: true, deny: true, reason: "tool_allowed", forward: true,
			trace: []string{"decide", "next.forwarded", "record allow"}},
		{name: "commit record fails, deny mode refuses", record: true, deny: true, recordErr: diskFull, reason: intercept.ReasonPolicyError,
			trace: []string{"decide", "next.forwarded", "record allow"}},
		{name: "commit record fails, warn mode forwards", record: true, recordErr: diskFull, reason: "tool_allowed", forward: true,
			trace: []string{"decide", "next.forwarded", "record allow"}},
		{name: "next refuses: nothing recorded", record: true, deny: true, nextFwdErr: errors.New("redis down"), reason: intercept.ReasonPolicyError,
			trace: []string{"decide", "next.forwarded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			g := &AuditGate{
				Next: traced{trace: &trace, dec: allow, fwd: tt.nextFwdErr},
				Err:  func() error { return tt.err },
				Deny: tt.deny,
			}
			if tt.record {
				g.Record = func(_ context.Context, _ *intercept.ActionDescriptor, dec intercept.Decision) error {
					trace = append(trace, "record "+string(dec.Verdict))
					return tt.recordErr
				}
			}
			var heard []intercept.Decision
			ic := &intercept.Interceptor{Decider: g, OnDecision: func(_ *intercept.ActionDescriptor, dc intercept.Decision) { heard = append(heard, dc) }}
			m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
			if err != nil {
				t.Fatal(err)
			}
			reply, forward := ic.Check(context.Background(), m, intercept.CallContext{Upstream: "u"})
			if forward != tt.forward {
				t.Errorf("forward: got %v, want %v (reply %s)", forward, tt.forward, reply)
			}
			if len(heard) != 1 || heard[0].Reason != tt.reason {
				t.Fatalf("decisions heard: got %+v, want one with reason %s", heard, tt.reason)
			}
			if diff := cmp.Diff(tt.trace, trace); diff != "" {
				t.Errorf("trace (-want +got):\n%s", diff)
			}
			if tt.reason == ReasonAuditUnavailable && !strings.Contains(string(reply), "audit") {
				t.Errorf("reply to a call refused for the audit store: got %s, want it to say why", reply)
			}
		})
	}
}

// TestAuditGateRecovers checks that deny mode lets calls through again as
// soon as the store can write.
func TestAuditGateRecovers(t *testing.T) {
	var err error = errors.New("disk full")
	var trace []string
	g := &AuditGate{Next: traced{trace: &trace, dec: intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}}, Err: func() error { return err }, Deny: true}
	d := &intercept.ActionDescriptor{ToolName: "echo"}
	if dec := intercept.Decide(context.Background(), g, d); dec.Reason != ReasonAuditUnavailable {
		t.Fatalf("while failing: got %s, want %s", dec.Reason, ReasonAuditUnavailable)
	}
	err = nil
	if dec := intercept.Decide(context.Background(), g, d); dec.Reason != "ok" {
		t.Errorf("after recovery: got %s, want ok", dec.Reason)
	}
}

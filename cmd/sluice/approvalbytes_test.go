package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestHeldCallOfMaxBodyBytes: the approvals store bounds the bytes held
// calls keep (approval.MaxLiveBytes, 256 MiB), an agent a tenth of it.
// A gateway whose max_body_bytes takes calls larger than that tenth
// (64 MiB here) could never hold one of them for approval, whoever sent
// it: each was denied approval_limit, "more than it may (26843545)", and
// no setting raised the bound. A call as large as max_body_bytes allows
// can be held.
func TestHeldCallOfMaxBodyBytes(t *testing.T) {
	g := governFor(t, "max_body_bytes: 67108864\npolicy: {default: allow, require_approval: [upload]}\n", t.TempDir())
	gate := &approval.Gate{Next: intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "rule"}, nil
	}), Store: g.gv.approvals}
	args := jsontext.Value(`{"file":"` + strings.Repeat("x", 40<<20) + `"}`)
	dec := intercept.Decide(context.Background(), gate, &intercept.ActionDescriptor{TxnID: "t1", Upstream: "files", ToolName: "upload",
		Agent: "alice", Principal: &intercept.Principal{ID: "alice"}, Parameters: args})
	if dec.Verdict != intercept.RequireApproval {
		t.Errorf("a call of 40 MiB under max_body_bytes 64 MiB: %s %s %q, want it held", dec.Verdict, dec.Reason, dec.PublicReason)
	}
}

// TestApprovalLogBoundsAgentName: each decision that is not an allow,
// and each change of a held call, is logged with its agent's name, which
// without auth is what the client calls itself, as long as a request:
// each wrote it whole into the log (the tool's name was cut,
// telemetry.ToolName), 2 MiB for one held call of a 1 MiB name. It is
// cut as events cut it.
func TestApprovalLogBoundsAgentName(t *testing.T) {
	g := governFor(t, "policy: {default: allow, require_approval: [echo]}\n", t.TempDir())
	agent := "mallory" + strings.Repeat("x", 1<<20)
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, fwd := g.gv.ic.Check(context.Background(), m, intercept.CallContext{Upstream: "demo", Agent: agent, Target: "http://127.0.0.1:1/mcp"}); fwd {
		t.Fatal("the call was forwarded, want it held")
	}
	logs := g.logs.String()
	if !strings.Contains(logs, "msg=approval") {
		t.Fatalf("no approval logged:\n%.500s", logs)
	}
	if len(logs) > 64<<10 {
		t.Errorf("%d bytes logged for a held call of an agent with a 1 MiB name:\n%s", len(logs), regexp.MustCompile(`x{100,}`).ReplaceAllString(logs, "x…"))
	}
}

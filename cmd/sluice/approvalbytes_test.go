package main

import (
	"context"
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

package approval

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackHistoryKeepsNamesBounded: a finished request stays in the
// history (the last 100) without its arguments, but kept its tool's
// name and its session's whole, each as long as the client wrote them (a
// made-up tool's name, max_body_bytes): 100 calls declined with 4 MiB
// names kept 400 MiB, in memory and in the approvals file. They are
// kept cut now, as events record names.
func TestAttackHistoryKeepsNamesBounded(t *testing.T) {
	s := NewStore(Options{})
	holdAll := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "upstream_requires_approval"}, nil
	})
	g := &Gate{Next: holdAll, Store: s}
	long := strings.Repeat("t", 1<<20)
	var ids []string
	for i := range 3 {
		d := intercept.Decide(context.Background(), g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: fmt.Sprint(i) + long,
			Upstream: "bank", Agent: "mallory", SessionID: fmt.Sprint(i) + long, Parameters: jsontext.Value(`{}`)})
		if d.Verdict != intercept.RequireApproval {
			t.Fatalf("call %d: %s %s", i, d.Verdict, d.Reason)
		}
		ids = append(ids, d.ApprovalID)
	}
	for _, id := range ids {
		if _, err := s.Decide(id, false, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		r, err := s.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != Declined || len(r.Tool) > 1024 || len(r.Session) > 1024 {
			t.Errorf("declined request %s: status %s, tool %d bytes, session %d bytes; want its names kept cut", id, r.Status, len(r.Tool), len(r.Session))
		}
	}
}

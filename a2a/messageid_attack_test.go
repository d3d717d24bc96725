package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackApprovedMessageIDChannel (attacker review): a message's
// decided arguments leave its messageId out, as SDK clients make one up
// afresh for every message, a retry too. But it is a string of any length
// of the caller's choosing that the agent gets: the approved message went
// again with a messageId holding data, under the approval. A messageId
// beyond what SDKs make (a UUID, a counter: up to 64 bytes) is bound.
func TestAttackApprovedMessageIDChannel(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","capabilities":{"pushNotifications":true},"skills":[{"id":"echo","description":"Echo."}]}`)
	hold := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "needs_human", PolicyVersion: "v1"}, nil
	})
	store := approval.NewStore(approval.Options{})
	gw := serveAs(t, &approval.Gate{Next: hold, Store: store}, rec.srv.URL, Options{})
	msg := func(id string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"` + id + `","role":"user","parts":[{"kind":"text","text":"summarize the public report"}]}}}`
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg("6f1c0b7e-2d7a-4b8e-9a51-3c2f0e9d4a11")); !strings.Contains(got, "approval_required") {
		t.Fatalf("the first message was not held: %s", got)
	}
	reqs := store.List()
	if len(reqs) != 1 {
		t.Fatalf("%d requests held, want 1", len(reqs))
	}
	if _, err := store.Decide(reqs[0].ID, true, "operator"); err != nil {
		t.Fatal(err)
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg("SECRET "+strings.Repeat("the quarterly numbers ", 10)))
	if rec.saw("SECRET") {
		t.Errorf("a message with data in its messageId reached the agent under the approval: %s", got)
	}
	// The approved message with a fresh id of the usual kind still goes.
	if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg("0d3e5a8c-9b1f-4c2e-8f7a-6b5d4c3e2f10")); !strings.Contains(got, "completed") {
		t.Errorf("the approved message with a fresh messageId: %s", got)
	}
}

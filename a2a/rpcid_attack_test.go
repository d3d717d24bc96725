package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackApprovedMessageRPCIDChannel: a message's decided arguments
// leave its JSON-RPC id out, as they left out a messageId of any length
// (TestAttackApprovedMessageIDChannel): clients count ids up or make up
// a UUID. But the agent gets the request whole, id included, and a
// string id is of any length of the caller's choosing: the approved
// message went again with an id holding data, under the approval, unseen
// by rules on args and the classifier. An id beyond what clients make
// (up to 64 bytes) is bound, as a messageId is; so is a decided
// follow-up's.
func TestAttackApprovedMessageRPCIDChannel(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}]}`)
	hold := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "needs_human", PolicyVersion: "v1"}, nil
	})
	store := approval.NewStore(approval.Options{})
	gw := serveAs(t, &approval.Gate{Next: hold, Store: store}, rec.srv.URL, Options{})
	msg := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"message/send","params":{"message":{"kind":"message","messageId":"6f1c0b7e-2d7a-4b8e-9a51-3c2f0e9d4a11","role":"user","parts":[{"kind":"text","text":"summarize the public report"}]}}}`
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg(`1`)); !strings.Contains(got, "approval_required") {
		t.Fatalf("the first message was not held: %s", got)
	}
	reqs := store.List()
	if len(reqs) != 1 {
		t.Fatalf("%d requests held, want 1", len(reqs))
	}
	if _, err := store.Decide(reqs[0].ID, true, "operator"); err != nil {
		t.Fatal(err)
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg(`"SECRET `+strings.Repeat("the quarterly numbers ", 10)+`"`))
	if rec.saw("SECRET") {
		t.Errorf("a message with data in its JSON-RPC id reached the agent under the approval: %s", got)
	}
	// The approved message with an id of the usual kind still goes.
	if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", msg(`"0d3e5a8c-9b1f-4c2e-8f7a-6b5d4c3e2f10"`)); !strings.Contains(got, "completed") {
		t.Errorf("the approved message with a fresh id: %s", got)
	}
	// A decided follow-up (tasks/get with historyLength) likewise.
	get := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/get","params":{"id":"t-1","historyLength":1}}`
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", get(`3`)); !strings.Contains(got, "approval_required") {
		t.Fatalf("the follow-up was not held: %s", got)
	}
	for _, r := range store.List() {
		if r.Status == approval.Pending {
			if _, err := store.Decide(r.ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
		}
	}
	got = do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", get(`"FOLLOWUP `+strings.Repeat("the quarterly numbers ", 10)+`"`))
	if rec.saw("FOLLOWUP") {
		t.Errorf("a follow-up with data in its JSON-RPC id reached the agent under the approval: %s", got)
	}
}

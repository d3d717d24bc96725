package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackApprovedMessageEmptyMemberNames: a message's decided
// arguments leave out empty members (null, "", {}, []), as SDK clients
// send unset fields so (the JS SDK's tenant, metadata, extensions,
// filename...). But the agent gets the request whole, and a member's
// name is bytes of the caller's choosing whatever its value: the
// approved message went again with {"<data>": null} in its metadata (or
// in the message, the params, a part), under the approval, unseen by
// rules on args and the classifier. Only an empty member an A2A message
// defines is left out; any other is bound.
func TestAttackApprovedMessageEmptyMemberNames(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}]}`)
	hold := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "needs_human", PolicyVersion: "v1"}, nil
	})
	store := approval.NewStore(approval.Options{})
	gw := serveAs(t, &approval.Gate{Next: hold, Store: store}, rec.srv.URL, Options{})
	// What the JS SDK sends for a text message, its unset fields empty.
	const sdk = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"tenant":"","message":{"kind":"message","messageId":"6f1c0b7e-2d7a-4b8e-9a51-3c2f0e9d4a11","role":"user","contextId":"","taskId":"","metadata":{},"extensions":[],"referenceTaskIds":[],"parts":[{"kind":"text","text":"summarize the public report","metadata":{},"filename":"","mediaType":""}]},"configuration":{},"metadata":{}}}`
	approve := func() {
		t.Helper()
		if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", sdk); !strings.Contains(got, "approval_required") {
			t.Fatalf("the message was not held: %s", got)
		}
		for _, r := range store.List() {
			if r.Status == approval.Pending {
				if _, err := store.Decide(r.ID, true, "operator"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	secret := "SECRET " + strings.Repeat("the quarterly numbers ", 10)
	for name, body := range map[string]string{
		"message.metadata": strings.Replace(sdk, `"metadata":{},"extensions"`, `"metadata":{"`+secret+`":null},"extensions"`, 1),
		"message":          strings.Replace(sdk, `"role":"user"`, `"role":"user","`+secret+`":""`, 1),
		"params":           strings.Replace(sdk, `"tenant":""`, `"tenant":"","`+secret+`":{}`, 1),
		"part":             strings.Replace(sdk, `"filename":""`, `"filename":"","`+secret+`":[]`, 1),
		"envelope":         strings.Replace(sdk, `"id":1,`, `"id":1,"`+secret+`":null,`, 1),
	} {
		approve()
		got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", body)
		if rec.saw("SECRET") {
			t.Fatalf("%s: a message with data in an empty member's name reached the agent under the approval: %s", name, got)
		}
		// The approval stands for the message approved, sent as the SDK sends it.
		if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", sdk); !strings.Contains(got, "completed") {
			t.Fatalf("%s: the approved message as the SDK sends it: %s", name, got)
		}
	}
}

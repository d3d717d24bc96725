package gateway

import (
	"strings"
	"testing"
)

// TestAttackApprovedCallEnvelopeAlias (attacker review): CallExtra, what
// an approval binds beside upstream, tool and arguments, named a params
// member "params.<name>", a _meta member "_meta.<name>" and a member of
// the JSON-RPC envelope by its own name, one after the other in one map:
// an envelope member named "params.note" (or "_meta.note") took the
// place of the params (or _meta) member, and the approved call went again
// with a note of the agent's choosing, the approved note beside it in the
// envelope, under the approval. Such a member is named "envelope.<name>"
// now.
func TestAttackApprovedCallEnvelopeAlias(t *testing.T) {
	for name, tc := range map[string]struct{ held, swapped string }{
		"params": {
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"note":"ok"}}`,
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"note":"SECRET-MEMBER"},"params.note":"ok"}`,
		},
		"_meta": {
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"note":"ok"}}}`,
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"note":"SECRET-META"}},"_meta.note":"ok"}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, true)
			url := f.gw.URL + "/mcp/demo"
			hdr := initializeWith(t, url, `{}`)
			if _, _, body := post(t, url, hdr, tc.held); !strings.Contains(body, "approval_required") {
				t.Fatalf("not held: %s", body)
			}
			if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
			_, _, body := post(t, url, hdr, tc.swapped)
			if f.upstreamSaw("SECRET-") {
				t.Errorf("a call other than the approved one reached the upstream under its approval: %s", body)
			}
			if !strings.Contains(body, "approval_required") {
				t.Errorf("the changed call was not held for an approval of its own: %s", body)
			}
		})
	}
}

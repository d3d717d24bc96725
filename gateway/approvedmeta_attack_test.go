package gateway

import (
	"strings"
	"testing"
)

// TestAttackApprovedCallMeta (attacker review): an approval binds the
// exact call, a hash of upstream, tool and arguments; the call's _meta
// and params members beside name and arguments were not in it, so the
// approved add{a:2,b:3} went again with data of the agent's choosing
// there, under the approval. They are bound too (CallExtra); a fresh
// progressToken, as SDK clients make one per request, is not.
func TestAttackApprovedCallMeta(t *testing.T) {
	f, url, hdr := approvedAdd(t)
	for _, swapped := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"note":"SECRET-META"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"note":"SECRET-MEMBER"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}},"note":"SECRET-ENVELOPE"}`,
	} {
		_, _, body := post(t, url, hdr, swapped)
		if f.upstreamSaw("SECRET-") {
			t.Errorf("a call other than the approved one reached the upstream under its approval: %s", body)
		}
		if !strings.Contains(body, "approval_required") {
			t.Errorf("the changed call %s was not held for an approval of its own: %s", swapped, body)
		}
	}
	// The approved call, with a progress token of its own, still goes.
	_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"progressToken":"p-9"}}}`)
	if !strings.Contains(body, `"text":"5"`) {
		t.Errorf("the approved call with a progress token: %s", body)
	}
}

// approvedAdd serves the demo upstream for approvals (no client may
// answer), opens a session, has addCall held and an operator approve it,
// and returns the fixture, the route's URL and the session's headers.
func approvedAdd(t *testing.T) (*fixture, string, map[string]string) {
	t.Helper()
	f, store := approvalFixture(t, Options{}, true)
	url := f.gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{}`)
	if _, _, body := post(t, url, hdr, addCall); !strings.Contains(body, "approval_required") {
		t.Fatalf("not held: %s", body)
	}
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
		t.Fatal(err)
	}
	return f, url, hdr
}

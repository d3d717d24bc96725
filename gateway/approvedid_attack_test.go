package gateway

import (
	"strings"
	"testing"
)

// TestAttackApprovedCallIDChannel (as attack99 found on the A2A side): a
// call's JSON-RPC id is the client's to choose and reaches the upstream
// as sent, and an approved call went again, under its approval, with
// data of the agent's choosing in its id (any length, no rule nor the
// approver seeing it). An id as SDKs make them (a number, a string of at
// most 64 bytes) is still the client's per request; a longer one is part
// of the call as approved.
func TestAttackApprovedCallIDChannel(t *testing.T) {
	f, url, hdr := approvedAdd(t)
	long := `"SECRET-` + strings.Repeat("x", 100) + `"`
	_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+long+`,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	if f.upstreamSaw("SECRET-") {
		t.Errorf("the approved call with data in its id reached the upstream under the approval: %s", body)
	}
	if !strings.Contains(body, "approval_required") {
		t.Errorf("the approved call with a 100-byte id was not held for an approval of its own: %s", body)
	}
	// The approved call, with an id as SDKs make them, still goes.
	_, _, body = post(t, url, hdr, `{"jsonrpc":"2.0","id":"0b6f5c1e-7a4e-4d4b-9b7e-3f2a1c9d8e7f","method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	if !strings.Contains(body, `"text":"5"`) {
		t.Errorf("the approved call with a UUID id: %s", body)
	}
}

package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
)

// TestAttackLoopbackAddressesFillApprovals: an agent on the gateway's
// host connects from whichever of 127.0.0.0/8 it likes (Linux). Each
// loopback address was a client of its own to the per-address bound of
// held calls (a tenth of the store), so calls from 127.0.0.2, 127.0.0.3,
// … under fresh names filled the store and another client's call was
// refused with approval_limit. Every loopback address is now one client:
// the flood holds a tenth, and a client behind a trusted proxy
// (192.0.2.7) still has its call held.
func TestAttackLoopbackAddressesFillApprovals(t *testing.T) {
	f, store := approvalFixtureWith(t, Options{TrustedProxies: loopbackProxy}, approval.Options{MaxLive: 20}, true)
	url := f.gw.URL + "/mcp/demo"
	held, limited := 0, 0
	for i := range 30 {
		from := fmt.Sprintf("127.0.0.%d", 2+i)
		_, body := postFrom(t, fromAddr(from), url, modernHeaders("tools/call", "add"), addCallAs(1, fmt.Sprintf("mallory-%d", i), i))
		tallyHeld(t, "call from "+from, body, &held, &limited)
	}
	if held > 2 || limited == 0 {
		t.Errorf("calls from 30 loopback addresses: got %d held and %d refused, want at most 2 held (a tenth of 20: one client)", held, limited)
	}
	_, body := postFrom(t, proxied("192.0.2.7"), url, modernHeaders("tools/call", "add"), addCallAs(1, "alice", 100))
	if !strings.Contains(body, "approval_required") {
		t.Errorf("another client's call after the flood: got %s, want it held for approval", body)
	}
	clients := map[string]bool{}
	for _, r := range store.List() {
		if r.Status == approval.Pending {
			clients[r.Client] = true
		}
	}
	if len(clients) != 2 || !clients["loopback"] || !clients["192.0.2.7"] {
		t.Errorf("held requests' clients: got %v, want loopback and 192.0.2.7", clients)
	}
}

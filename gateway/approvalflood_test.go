package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
)

// fromAddr is an HTTP client whose connections come from ip: an agent on
// the gateway's host may connect from any of 127.0.0.0/8, all of them
// one client (TestAttackLoopbackAddressesFillApprovals).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// postFrom is post from client c.
func postFrom(t *testing.T, c *http.Client, url string, hdr map[string]string, body string) (http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header, string(b)
}

func addCallAs(id int, agent string, a int) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"add","arguments":{"a":` + itoa(a) + `,"b":1}` +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + agent +
		`","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// TestAttackRenamedAgentsFillApprovals: without authentication an agent
// is the name its client gives, at each 2026-07-28 request or each 2025
// session's initialize. A client giving a new name for every few held
// calls passed the per-agent bound (100) and filled the store's (10,000
// live requests, here 20), after which no other agent's call could be
// held: every one was denied with approval_limit until the flood expired
// (approvals.timeout, 15m) — and the attacker could renew it for ever.
// The calls of one client address are now bounded to a tenth of the
// store, so another client's call is still held.
func TestAttackRenamedAgentsFillApprovals(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			f, store := approvalFixtureWith(t, Options{TrustedProxies: loopbackProxy}, approval.Options{MaxLive: 20}, true)
			url := f.gw.URL + "/mcp/demo"
			attacker, honest := proxied("192.0.2.1"), proxied("192.0.2.2")
			held, limited := 0, 0
			for i := range 30 {
				agent := fmt.Sprintf("mallory-%d", i)
				var body string
				if era == "2026-07-28" {
					_, body = postFrom(t, attacker, url, modernHeaders("tools/call", "add"), addCallAs(1, agent, i))
				} else {
					hdr, _ := postFrom(t, attacker, url, map[string]string{"Mcp-Protocol-Version": era},
						`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+era+`","capabilities":{},"clientInfo":{"name":"`+agent+`","version":"1"}}}`)
					h := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": era}
					postFrom(t, attacker, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
					_, body = postFrom(t, attacker, url, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":`+itoa(i)+`,"b":1}}}`)
				}
				tallyHeld(t, fmt.Sprintf("attacker's call %d", i), body, &held, &limited)
			}
			if held > 2 || limited == 0 {
				t.Errorf("attacker, renaming itself at each call: got %d calls held and %d refused, want at most 2 held (a tenth of 20)", held, limited)
			}
			_, body := postFrom(t, honest, url, modernHeaders("tools/call", "add"), addCallAs(1, "alice", 100))
			if !strings.Contains(body, "approval_required") {
				t.Errorf("another client's call after the flood: got %s, want it held for approval", body)
			}
			for _, r := range store.List() {
				if r.Status == approval.Pending && r.Client == "" {
					t.Errorf("held request %s of %s: no client address recorded", r.ID, r.Agent)
				}
			}
		})
	}
}

// tallyHeld counts body, the answer to call, as held for approval or
// refused for the approval store's bounds; anything else fails t.
func tallyHeld(t *testing.T, call, body string, held, limited *int) {
	t.Helper()
	switch {
	case strings.Contains(body, "approval_required"):
		*held++
	case strings.Contains(body, approval.ReasonTooMany):
		*limited++
	default:
		t.Fatalf("%s: got %s, want it held or refused with %s", call, body, approval.ReasonTooMany)
	}
}

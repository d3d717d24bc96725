package gateway

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAgentHeaderUnderscored: the agent header spelt with
// underscores (X_agent beside X-Agent) is refused: CGI, WSGI and nginx's
// $http_ variables read it as X-Agent, so an upstream reading the agent
// so would take bob for the agent the gateway decided alice's call for.
func TestAttackAgentHeaderUnderscored(t *testing.T) {
	f := newFixture(t, allowEcho, Options{AgentHeader: "X-Agent"})
	call := modernCall(1, "echo", `{"message":"hi"}`)
	hdr := func(extra map[string]string) map[string]string {
		h := modernHeaders("tools/call", "echo")
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, extra := range []map[string]string{
		{"X-Agent": "alice", "X_agent": "bob"},
		{"X-Agent": "alice", "x_AGENT": "bob"},
		{"X_Agent": "bob"},
	} {
		before := f.rec.n.Load()
		status, _, body := post(t, f.gw.URL+"/mcp/demo", hdr(extra), call)
		if status != 400 || errorCode(t, body) != intercept.CodeInvalidRequest || !strings.Contains(body, "X-Agent") {
			t.Errorf("%v: got %d %s, want 400 invalid request naming X-Agent", extra, status, body)
		}
		if f.rec.n.Load() != before {
			t.Errorf("%v: the request reached the upstream", extra)
		}
	}
	if status, _, body := post(t, f.gw.URL+"/mcp/demo", hdr(map[string]string{"X-Agent": "alice", "X_agent_id": "7"}), call); status != 200 || !strings.Contains(body, "Echo: hi") {
		t.Errorf("another header: got %d %s, want the echo", status, body)
	}
}

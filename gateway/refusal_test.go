package gateway

import (
	"sync"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// Options.OnIdentityRefused hears of each request refused for who it
// claims to be, without auth too: a session id replayed on another
// route, and presented by a client naming another agent.
func TestIdentityRefusalHook(t *testing.T) {
	var mu sync.Mutex
	var got []IdentityRefusal
	f := newFixture(t, allowEcho, Options{OnIdentityRefused: func(ir IdentityRefusal) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ir)
	}})
	sid := initialize(t, f.gw.URL+"/mcp/demo")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	if status, _, body := post(t, f.gw.URL+"/mcp/other", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != 404 {
		t.Fatalf("session replayed on another route: got %d %s, want 404", status, body)
	}
	renamed := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"mallory","version":"1"}}}}`
	if status, _, body := post(t, f.gw.URL+"/mcp/demo", hdr, renamed); status != 404 {
		t.Fatalf("session presented as another client: got %d %s, want 404", status, body)
	}
	want := []IdentityRefusal{
		{Transport: "streamable-http", Session: telemetry.SessionRef(sid), Route: "other", Agent: "raw", Reason: "session opened on route demo"},
		{Transport: "streamable-http", Session: telemetry.SessionRef(sid), Route: "demo", Agent: "raw", Claimed: "mallory", Reason: "session of another agent"},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("refusals: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("refusal %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

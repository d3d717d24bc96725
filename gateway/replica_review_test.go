package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// virtualReplicas starts n gateways with the same session key, each with
// one virtual server over the demo upstream and the given session limits.
func virtualReplicas(t *testing.T, n int, opts Options) []string {
	t.Helper()
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	var urls []string
	for range n {
		o := opts
		o.Upstreams = []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}
		o.VirtualServers = []VirtualServer{{}}
		o.SessionKeys = [][]byte{key(1)}
		g, err := New(o, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL)
	}
	return urls
}

func initVirtual(t *testing.T, url, name string) (int, string) {
	t.Helper()
	status, h, _ := post(t, url+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}}`)
	return status, h.Get(hdrSession)
}

// TestVirtualAdoptSkipsSessionLimits: a virtual server counts a new
// session against the gateway's per-agent and per-address limits at
// initialize, but a sealed session another replica adopts only against
// the table's size. So one agent fills a replica's whole virtual-server
// table: it opens a session on replica A (within its share of one),
// ends it there with DELETE (freeing its place on A; B does not know it
// ended), and presents the id to B, which adopts it — again and again.
// Then every other agent is refused on B (503 at initialize, 404 for
// their own sessions from A). A route's adopt admits the session in the
// limits like a new one (sealed.go); a virtual server's should too.
func TestVirtualAdoptSkipsSessionLimits(t *testing.T) {
	rs := virtualReplicas(t, 2, Options{MaxSessions: 6, MaxSessionsPerAgent: 1, MaxSessionsPerClient: 100})
	a, b := rs[0], rs[1]
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	adopted := 0
	for i := range 6 {
		status, sid := initVirtual(t, a, "mallory")
		if status != 200 || sid == "" {
			t.Fatalf("mallory's initialize %d on A: %d", i, status)
		}
		hdr := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"}
		if st := deleteSession(t, a+"/mcp", hdr); st != http.StatusNoContent && st != http.StatusOK {
			t.Fatalf("DELETE on A: %d", st)
		}
		if status, _, _ := post(t, b+"/mcp", hdr, list); status == 200 {
			adopted++
		}
	}
	if adopted > 1 {
		t.Errorf("replica B adopted %d of mallory's sessions; her share is 1 (max_sessions_per_agent)", adopted)
	}
	if status, _ := initVirtual(t, b, "alice"); status != 200 {
		t.Errorf("alice's first session on B: %d, want 200 (mallory took every place)", status)
	}
}

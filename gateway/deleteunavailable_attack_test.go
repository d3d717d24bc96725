package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackDeleteUpstreamUnavailableRetried: alice ends her session and
// the DELETE meets an upstream that cannot take it just then (503, as a
// proxy in front of a down server answers). The gateway's session ends
// (as for a DELETE that did not reach the upstream), and the upstream's
// session is asked to end again in the background. Before, the gateway
// ended its session but never asked again: the upstream's session, and
// what it holds, stayed until it idled out there, while a transport
// error's was retried.
func TestAttackDeleteUpstreamUnavailableRetried(t *testing.T) {
	s := mgoserver.NewMCPServer("flaky", "1", mgoserver.WithToolCapabilities(true))
	mcp := mgoserver.NewStreamableHTTPServer(s)
	var deletes atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && deletes.Add(1) == 1 {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		mcp.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/up"
	hdr := openSession(t, url, "alice", nil)
	deleteSession(t, url, hdr)
	if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("the ended session's id: %d %s, want 404", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for deletes.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := deletes.Load(); n != 2 {
		t.Errorf("the upstream was asked to end its session %d times, want 2 (once more after its 503)", n)
	}
}

package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestUpstreamRedirectNotFollowed: an upstream that answers a call with a
// redirect does not make the gateway send the call somewhere else. Policy
// decided about the configured upstream; following a 307 or 308 would
// replay the call, body and headers included, to whatever the Location
// names (another host, an internal address), with the operator's headers
// for that upstream.
func TestUpstreamRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: redirected"}]}}`))
	}))
	defer other.Close()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/mcp", code)
		}))
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		// The agent's own client must not follow it either, to see what
		// the gateway answered.
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/demo", strings.NewReader(modernCall(1, "echo", `{"message":"hi"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "echo") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status, hdr, body := resp.StatusCode, resp.Header, string(b)
		if n := elsewhere.Load(); n != 0 || strings.Contains(body, "redirected") {
			t.Errorf("%d: the call was sent to the redirect's target (%d requests there): %d %s", code, n, status, body)
		}
		// Nor passed on: the agent's client would follow it around the
		// gateway.
		t.Logf("%d: %d %s", code, status, body)
		if hdr.Get("Location") != "" || !strings.Contains(body, "redirect") || !strings.Contains(body, `"error"`) {
			t.Errorf("%d: the agent got %d (Location %q) %s, want a JSON-RPC error naming the redirect and no Location", code, status, hdr.Get("Location"), body)
		}
		// A 2025 session's initialize and call go the same way.
		_, _, body = post(t, gw.URL+"/mcp/demo", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		if n := elsewhere.Load(); n != 0 || !strings.Contains(body, `"error"`) {
			t.Errorf("%d: 2025 initialize: %d requests to the redirect's target, got %s", code, n, body)
		}
		gw.Close()
		g.Close()
		up.Close()
	}
}

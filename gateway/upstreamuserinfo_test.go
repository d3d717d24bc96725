package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestUpstreamURLUserinfo: an upstream whose url carries credentials
// (http://user:password@host/mcp) gets them as Basic authorization on
// every call the gateway forwards, as on the requests its transports send
// with net/http's Client; the agent's own Authorization never. Before, the
// forwarded POSTs went without (h1.Send skipped what Client.Do does with a
// URL's userinfo), and an upstream that requires them answered 401: every
// call failed with ErrUpstreamRefusedCredentials.
func TestUpstreamURLUserinfo(t *testing.T) {
	mcp := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	var mu sync.Mutex
	var unauthorized []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, ok := r.BasicAuth(); !ok || user != "gw" || password != "s3cret" {
			mu.Lock()
			unauthorized = append(unauthorized, r.Method+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcp.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	opts := Options{Upstreams: []Upstream{{Name: "demo", URL: strings.Replace(up.URL, "http://", "http://gw:s3cret@", 1) + "/mcp"}}}
	g, err := New(opts, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	agent := map[string]string{"Authorization": "Basic " + "YWdlbnQ6YWdlbnQ="} // agent:agent
	status, hdr, body := post(t, gw.URL+"/mcp/demo", agent, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if status != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: got %d %s, want 200 with a session", status, body)
	}
	agent["Mcp-Session-Id"] = hdr.Get("Mcp-Session-Id")
	status, _, body = post(t, gw.URL+"/mcp/demo", agent, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	if status != http.StatusOK || !strings.Contains(body, "Echo: hi") {
		t.Errorf("tools/call: got %d %s, want the echo", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(unauthorized) > 0 {
		t.Errorf("the upstream refused %q, want every request with the URL's credentials", unauthorized)
	}
}

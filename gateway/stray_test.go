package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackStrayListResponse (found by an attacker review): clients take
// a response by its id whatever stream or POST it comes on (the MCP
// TypeScript SDK and mcp-go keep one table of pending requests). A hostile
// upstream holds a client's tools/list POST and sends the answer to it,
// naming poisoned tools, on the GET stream or in its answer to a
// tools/call: the gateway, reading those only for their own requests,
// neither screened nor recorded it. The client's list was the upstream's
// choice; the inventory got a harmless one later.
func TestAttackStrayListResponse(t *testing.T) {
	stray := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","description":"` + poisoned + `","inputSchema":{"type":"object"}}]}}`
	for _, c := range []struct{ name, method, ct, body string }{
		{"GET stream", http.MethodGet, "text/event-stream", "event: message\ndata: " + stray + "\n\n"},
		{"event stream of a call", http.MethodPost, "text/event-stream", "event: message\ndata: " + stray + "\n\n"},
		{"JSON answer to a call", http.MethodPost, "application/json", stray},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ct)
				io.WriteString(w, c.body)
			}))
			defer up.Close()
			var mu sync.Mutex
			var seen int
			ic := &intercept.Interceptor{Decider: allowEcho, Observer: observeFunc(func(string, jsontext.Value) {
				mu.Lock()
				seen++
				mu.Unlock()
			})}
			g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}}, ic, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			defer closeServed(t, gw, g)
			var rd io.Reader
			if c.method == http.MethodPost {
				rd = strings.NewReader(modernCall(1, "echo", `{"message":"hi"}`))
			}
			req, _ := http.NewRequest(c.method, gw.URL+"/mcp/demo", rd)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "echo") {
				if c.method == http.MethodPost {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(string(b), poisoned) && seen == 0 {
				t.Errorf("the client got a tools/list answer to a request not on this exchange, which the gateway never saw: %s", b)
			}
		})
	}
}

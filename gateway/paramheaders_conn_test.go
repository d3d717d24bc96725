package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestParamHeadersOverConn: a 2026-07-28 client on /sse or /ws calls a
// tool of an HTTP upstream that marks an argument with x-mcp-header
// (SEP-2243). The gateway is then the upstream's HTTP client and must
// mirror the argument into Mcp-Param-{Name}, as it does for a call on
// /mcp: it wrote Mcp-Method and Mcp-Name only, and an MCP TypeScript SDK
// v2 server, which refuses a call whose marked argument has no header,
// answered every such call 400 (found by trial85 with
// @modelcontextprotocol/client 2.4.0's SSE transport).
func TestParamHeadersOverConn(t *testing.T) {
	var mu sync.Mutex
	var got []string // each tools/call's Mcp-Param-Region, as the upstream got it
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m, err := intercept.DecodeMessage(b)
		if err != nil || m.Kind != intercept.KindRequest {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "tools/list":
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`)
		case "tools/call":
			mu.Lock()
			got = append(got, strings.Join(r.Header.Values("Mcp-Param-Region"), ","))
			mu.Unlock()
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"ran"}]}}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`)
		}
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	for _, tc := range []struct {
		name string
		d    transport.Dialer
	}{
		{"sse", &transport.SSEDialer{URL: srv.URL + "/sse/u"}},
		{"ws", &transport.WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			c := dialWith(t, tc.d)
			exchangeOn(t, c, modernRequest("tools/list", ""), "1")
			m := exchangeOn(t, c, modernCall(2, "echo", `{"region":"eu-west ü"}`), "2")
			if !strings.Contains(string(m.Raw), `"ran"`) {
				t.Fatalf("the call got %s, want the upstream's result", m.Raw)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := "=?base64?ZXUtd2VzdCDDvA==?="; len(got) != 1 || got[0] != want {
				t.Errorf("the upstream got Mcp-Param-Region %q, want [%q]", got, want)
			}
		})
	}
}

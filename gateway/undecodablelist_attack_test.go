package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackUndecodableToolsList: a hostile upstream answers tools/list
// with bytes the gateway cannot decode but a lenient client reads, the
// tool policy hides (send_email) inside them: a second "result" (Go's
// and JavaScript's parsers take the last), invalid UTF-8, text after the
// message, a BOM before it. Whatever the status, framing and encoding,
// the client must never be shown send_email: it gets the list screened or
// an error. With an error status (4xx, 5xx) the body was passed on
// unscreened, and mcp-go's client takes a result in it (read by
// encoding/json: the last "result", "RESULT", invalid UTF-8 mended) for
// its request's answer.
// listOne is a tools/list request of the stateless protocol, id 1.
const listOne = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

func TestAttackUndecodableToolsList(t *testing.T) {
	const echo = `{"name":"echo","inputSchema":{"type":"object"}}`
	const email = `{"name":"send_email","inputSchema":{"type":"object"}}`
	bodies := map[string]string{
		"duplicate result": `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `]},"result":{"tools":[` + echo + `,` + email + `]}}`,
		"duplicate tools":  `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `],"tools":[` + echo + `,` + email + `]}}`,
		"invalid UTF-8":    `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `,{"name":"send_email","description":"` + "\xff" + `","inputSchema":{"type":"object"}}]}}`,
		"trailing text":    `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `,` + email + `]}} x`,
		"BOM":              "\xEF\xBB\xBF" + `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `,` + email + `]}}`,
		"not JSON-RPC":     `{"id":1,"result":{"tools":[` + echo + `,` + email + `]}}`,
		"plain":            `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `,` + email + `]}}`,
		"RESULT":           `{"jsonrpc":"2.0","id":1,"RESULT":{"tools":[` + echo + `,` + email + `]}}`,
	}
	for name, b := range bodies {
		for _, f := range []struct {
			name, ct string
			status   int
			frame    func(string) string
		}{
			{"json", "application/json", http.StatusOK, func(s string) string { return s }},
			{"events", "text/event-stream", http.StatusOK, func(s string) string { return "event: message\ndata: " + s + "\n\n" }},
			{"json 500", "application/json", http.StatusInternalServerError, func(s string) string { return s }},
			{"json 400", "application/json", http.StatusBadRequest, func(s string) string { return s }},
			{"events 500", "text/event-stream", http.StatusInternalServerError, func(s string) string { return "event: message\ndata: " + s + "\n\n" }},
		} {
			t.Run(name+"/"+f.name, func(t *testing.T) {
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", f.ct)
					w.WriteHeader(f.status)
					w.Write([]byte(f.frame(b)))
				}))
				defer up.Close()
				g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}},
					&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g.Handler())
				defer closeServed(t, gw, g)
				status, _, got := post(t, gw.URL+"/mcp/demo", modernHeaders("tools/list", ""), listOne)
				if strings.Contains(got, "send_email") {
					t.Errorf("got %d %s: send_email, which policy hides, shown to the client", status, got)
				}
				if !strings.Contains(got, `"echo"`) && !strings.Contains(got, `"error"`) {
					t.Errorf("got %d %s, want the list screened or a JSON-RPC error", status, got)
				}
			})
		}
	}
}

// TestUpstreamErrorStatusPassedOn: a JSON-RPC error with an error status
// (4xx, 5xx), and an error page, reach the client as the upstream sent
// them: no result in them needs screening.
func TestUpstreamErrorStatusPassedOn(t *testing.T) {
	for _, c := range []struct{ name, ct, body string }{
		{"JSON-RPC error", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such \u0074ool"}}`},
		{"error page", "text/html", `<html>no result here</html>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ct)
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(c.body))
			}))
			defer up.Close()
			g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}},
				&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			defer closeServed(t, gw, g)
			if status, _, got := post(t, gw.URL+"/mcp/demo", modernHeaders("tools/list", ""), listOne); status != http.StatusBadRequest || got != c.body {
				t.Errorf("got %d %s, want 400 %s", status, got, c.body)
			}
		})
	}
}

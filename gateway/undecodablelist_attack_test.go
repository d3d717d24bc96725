package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// The tools of undecodableLists: listEmail is the one policy hides.
const (
	listEcho  = `{"name":"echo","inputSchema":{"type":"object"}}`
	listEmail = `{"name":"send_email","inputSchema":{"type":"object"}}`
)

// undecodableLists are tools/list answers to id 1 showing send_email in
// a form the gateway cannot decode, or (plain) can.
var undecodableLists = map[string]string{
	"duplicate result": `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `]},"result":{"tools":[` + listEcho + `,` + listEmail + `]}}`,
	"duplicate tools":  `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `],"tools":[` + listEcho + `,` + listEmail + `]}}`,
	"invalid UTF-8":    `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `,{"name":"send_email","description":"` + "\xff" + `","inputSchema":{"type":"object"}}]}}`,
	"trailing text":    `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `,` + listEmail + `]}} x`,
	"BOM":              "\xEF\xBB\xBF" + `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `,` + listEmail + `]}}`,
	"not JSON-RPC":     `{"id":1,"result":{"tools":[` + listEcho + `,` + listEmail + `]}}`,
	"plain":            `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + listEcho + `,` + listEmail + `]}}`,
	"RESULT":           `{"jsonrpc":"2.0","id":1,"RESULT":{"tools":[` + listEcho + `,` + listEmail + `]}}`,
}

// listOne is a tools/list request of the stateless protocol, id 1.
const listOne = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

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
func TestAttackUndecodableToolsList(t *testing.T) {
	for name, b := range undecodableLists {
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

// TestAttackUndecodableToolsListStdio is TestAttackUndecodableToolsList
// for a stdio upstream, on a session bridged to it and on a WebSocket
// connection: the line the server writes for the list is read, or
// dropped and the list answered with an error, never passed on unread.
// Before, it was dropped and the client's tools/list waited for ever.
func TestAttackUndecodableToolsListStdio(t *testing.T) {
	start := func(t *testing.T, list string) string {
		up := &scriptUpstream{handle: func(msg []byte) [][]byte {
			var r reqView
			if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
				return nil
			}
			switch r.Method {
			case "initialize":
				return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"evil","version":"1"}}}`)}
			case "tools/list":
				return [][]byte{[]byte(strings.Replace(list, `"id":1`, `"id":`+string(r.ID), 1))}
			}
			return nil
		}}
		g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
			&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		g.routes["u"].dialer = up
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		return gw.URL
	}
	check := func(t *testing.T, name, got string) {
		t.Helper()
		if strings.Contains(got, "send_email") {
			t.Errorf("got %s: send_email, which policy hides, shown to the client", got)
		}
		if name != "plain" && !strings.Contains(got, "the upstream's tools/list answer was refused") {
			t.Errorf("got %s, want the list refused with an error", got)
		}
	}
	for name, list := range undecodableLists {
		t.Run(name+"/bridged", func(t *testing.T) {
			url := start(t, list) + "/mcp/u"
			hdr := initializeWith(t, url, `{}`)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			done := make(chan string, 1)
			go func() {
				_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
				done <- body
			}()
			select {
			case got := <-done:
				check(t, name, got)
			case <-ctx.Done():
				t.Fatal("no answer to tools/list after 5s: the upstream's undecodable answer was dropped and the request left waiting")
			}
		})
		t.Run(name+"/websocket", func(t *testing.T) {
			base := start(t, list)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"}).Dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			read := rpcReader(t, ctx, c)
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desk","version":"1"}}}`))
			read()
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			_, got := read() // fails the test when nothing comes in 5s
			check(t, name, got)
		})
	}
}

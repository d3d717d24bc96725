package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// bigResultUpstream is an upstream over kind whose tool big answers with
// a text of arguments.bytes Qs: the Python stdio server in testdata, or
// one served here over WebSocket, legacy SSE or a Streamable HTTP event
// stream.
func bigResultUpstream(t *testing.T, kind Transport) Upstream {
	t.Helper()
	switch kind {
	case TransportStdio:
		cmd, args := lineFramedServer(t, "python3", "unl_server.py")
		return Upstream{Name: "u", Command: cmd, Args: args, Env: map[string]string{"SLUICE_TEST_LOG": filepath.Join(t.TempDir(), "calls.log")}}
	case TransportWebSocket:
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := transport.AcceptWS(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			serveBigResults(r.Context(), c)
		}))
		t.Cleanup(up.Close)
		return Upstream{Name: "u", Transport: TransportWebSocket, URL: "ws" + strings.TrimPrefix(up.URL, "http")}
	case TransportSSE:
		s := &transport.SSEServer{OnSession: func(ctx context.Context, _ string, c transport.Conn) { serveBigResults(ctx, c) }}
		up := httptest.NewServer(s)
		t.Cleanup(up.Close)
		t.Cleanup(func() { s.Close() })
		return Upstream{Name: "u", Transport: TransportSSE, URL: up.URL + "/sse"}
	default: // a Streamable HTTP upstream answering with an event stream
		up := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: "+bigResult(m)+"\n\n")
		}))
		t.Cleanup(up.Close)
		return Upstream{Name: "u", URL: up.URL + "/mcp"}
	}
}

// serveBigResults answers the requests read from c as an MCP server with
// the tool big.
func serveBigResults(ctx context.Context, c transport.Conn) {
	for {
		b, err := c.Read(ctx)
		if err != nil {
			return
		}
		if m, err := intercept.DecodeMessage(b); err == nil && m.Kind == intercept.KindRequest {
			c.Write(ctx, []byte(bigResult(m)))
		}
	}
}

// bigResult is the answer to request m.
func bigResult(m *intercept.Message) string {
	result := `{}`
	switch m.Method {
	case "initialize":
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}`
	case "tools/call":
		var p struct {
			Arguments struct{ Bytes int }
		}
		json.Unmarshal(m.Params, &p)
		result = `{"content":[{"type":"text","text":"` + strings.Repeat("Q", p.Arguments.Bytes) + `"}]}`
	}
	return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`
}

// TestUpstreamMessageLimit: one message from an upstream is bounded by
// max_answer_bytes on every transport. It was a fixed 16 MiB on a stdio
// line, a WebSocket message and an event's data: a 20 MiB tool result (an
// image) was refused however max_answer_bytes was set, and a lower
// max_answer_bytes let a larger message through unread. Now the result
// passes within the limit (by default too: 32 MiB), and past it is
// refused with an error naming the limit, counted, never passed on.
func TestUpstreamMessageLimit(t *testing.T) {
	for _, kind := range []Transport{TransportStdio, TransportWebSocket, TransportSSE, TransportStreamableHTTP} {
		t.Run(string(kind), func(t *testing.T) {
			tests := []struct {
				name     string
				limit    int64 // MaxAnswerBytes
				size     int   // of the result's text
				wantPass bool
			}{
				{"20 MiB within max_answer_bytes", 64 << 20, 20 << 20, true},
				{"past max_answer_bytes", 1 << 20, 2 << 20, false},
			}
			if kind == TransportStdio {
				tests = append(tests, struct {
					name     string
					limit    int64
					size     int
					wantPass bool
				}{"20 MiB within the default", 0, 20 << 20, true})
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					url, tp := messageLimitGateway(t, bigResultUpstream(t, kind), Options{MaxAnswerBytes: tt.limit})
					_, _, got := post(t, url, modernHeaders("tools/call", "big"),
						modernRequest("tools/call", `"name":"big","arguments":{"bytes":`+strconv.Itoa(tt.size)+`},`))
					n := strings.Count(got, "Q")
					if tt.wantPass {
						if n != tt.size {
							t.Errorf("got %d Qs of the %d the result has: %.300s", n, tt.size, got)
						}
						return
					}
					want := "longer than " + strconv.FormatInt(tt.limit>>20, 10) + " MiB"
					if n > 0 || !strings.Contains(got, `"error"`) || !strings.Contains(got, want) {
						t.Errorf("got %d Qs in %.300s, want a JSON-RPC error saying %q", n, got, want)
					}
					if c := withheldCount(t, tp, "too_large"); c != "1" {
						t.Errorf("/metrics counts %s messages withheld as too large, want 1", c)
					}
				})
			}
		})
	}
}

// messageLimitGateway is a gateway with opts in front of up, allowing
// every call, with Prometheus metrics. It returns up's /mcp URL.
func messageLimitGateway(t *testing.T, up Upstream, opts Options) (string, *telemetry.Provider) {
	t.Helper()
	tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstreams, opts.Metrics = []Upstream{up}, tp.Metrics()
	g, err := New(opts, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw.URL + "/mcp/" + up.Name, tp
}

// TestClientWSMessageLimit: a message from a /ws client is bounded like a
// request body (max_body_bytes), not by a fixed 16 MiB: one past it
// closes the connection with 1009 (message too big) and never reaches
// the upstream.
func TestClientWSMessageLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit int64 // MaxBodyBytes
		size  int   // of the call's argument
	}{
		{"past max_body_bytes", 64 << 10, 100 << 10},
		{"past the default", 0, 5 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := make(chan string, 10)
			up := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
				tell(t, calls, m.Method)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, bigResult(m))
			}))
			t.Cleanup(up.Close)
			url, _ := messageLimitGateway(t, Upstream{Name: "u", URL: up.URL + "/mcp"}, Options{MaxBodyBytes: tt.limit})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(strings.TrimSuffix(url, "/mcp/u"), "http")+"/ws/u", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			msgs := []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"pad":"` + strings.Repeat("P", tt.size) + `"}}}`,
			}
			// The gateway may close the connection while the big frame is
			// still being written: then the write fails (reset), and the
			// close is not read.
			reset := false
			for i, msg := range msgs {
				if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					if i < len(msgs)-1 {
						t.Fatal(err)
					}
					reset = true
				}
			}
			for {
				_, b, err := ws.ReadMessage()
				if err != nil {
					if !reset && !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
						t.Errorf("got %v, want the connection closed with 1009 (message too big)", err)
					}
					break
				}
				if strings.Contains(string(b), `"id":2`) {
					t.Fatalf("a %d-byte message past the limit was answered: %.300s", tt.size, b)
				}
			}
			for len(calls) > 0 {
				if m := <-calls; m == "tools/call" {
					t.Errorf("the upstream got the call past the limit")
				}
			}
		})
	}
}

// TestVirtualBodyLimit (found by an attacker review): a virtual server's
// POST body is bounded by max_body_bytes as a route's is, whether its
// length is declared or not. A chunked body was read whole, up to the
// gateway's shared body budget (16 × max_body_bytes), and handled: one
// client held every other's budget, and a message past the limit was
// answered.
func TestVirtualBodyLimit(t *testing.T) {
	calls := make(chan string, 10)
	up := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
		tell(t, calls, m.Method)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bigResult(m))
	}))
	t.Cleanup(up.Close)
	url, _ := messageLimitGateway(t, Upstream{Name: "u", URL: up.URL + "/mcp"}, Options{MaxBodyBytes: 64 << 10, VirtualServers: []VirtualServer{{}}})
	base := strings.TrimSuffix(url, "/mcp/u")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},` +
		`"clientInfo":{"name":"t","version":"1"},"_meta":{"pad":"` + strings.Repeat("P", 100<<10) + `"}}}`
	for _, path := range []string{"/mcp/u", "/mcp"} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(init)
			if chunked { // no declared length: sent chunked
				body = io.MultiReader(strings.NewReader(init))
			}
			req, _ := http.NewRequest(http.MethodPost, base+path, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s, chunked %v: a %d-byte body past max_body_bytes (64 KiB): got HTTP %d %.200s, want 413", path, chunked, len(init), resp.StatusCode, b)
			}
		}
	}
	for len(calls) > 0 {
		t.Errorf("the upstream got %s from a body past the limit", <-calls)
	}
}

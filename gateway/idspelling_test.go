package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// hidesEmail denies send_email and hides it from tools/list.
type hidesEmail struct{}

func (hidesEmail) Decide(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	if d.ToolName == "send_email" {
		return intercept.Decision{Verdict: intercept.Deny, Reason: "test", PublicReason: "no email"}, nil
	}
	return intercept.Decision{Verdict: intercept.Allow, Reason: "test"}, nil
}

func (hidesEmail) Visible(_ context.Context, d *intercept.ActionDescriptor) bool {
	return d.ToolName != "send_email"
}

// TestIDSpelling is a differential test of request ids between the
// gateway and real MCP servers (mcp-go's, as examples/demo-server, over
// Streamable HTTP and over stdio). A server reads an id as a value and
// answers with its own spelling of it: mcp-go and the go-sdk answer 1.0,
// 1e0 and -0 with 1, 1 and 0, integers past 2^53 with a float64's
// nearest (the go-sdk truncates 1.5 to 1), and encoding/json writes "<"
// as "\u003c". The gateway pairs an answer with its request by the id:
// an answer it cannot pair is never screened (tools hidden, tasks of
// other agents left out, a list that reads two ways refused) nor
// recorded. Every id must either be refused before it is forwarded or
// have its answer screened: here, the tools/list never shows send_email.
func TestIDSpelling(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "http", URL: up.URL + "/mcp"},
		{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}},
	}}, &intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	ids := []struct {
		id      string
		refused bool // the gateway must refuse it: the server would read another number
	}{
		{`7`, false},
		{`"plain"`, false},
		{`1.0`, true},
		{`1e0`, true},
		{`2E1`, true},
		{`-0`, true},
		{`1.5`, true},
		{`9007199254740993`, true}, // 2^53+1: a float64 reads 2^53
		{`"<a>"`, false},           // encoding/json answers "\u003ca\u003e"
		{`"a\u0062"`, false},       // answered "ab"
		{`"\u2028"`, false},        // encoding/json answers "\u2028", Sluice's stdio framing writes it escaped
	}
	for _, route := range []string{"http", "stdio"} {
		url := gw.URL + "/mcp/" + route
		hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
		for _, tc := range ids {
			t.Run(route+"/"+tc.id, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 10e9)
				defer cancel()
				done := make(chan string, 1)
				go func() {
					_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+tc.id+`,"method":"tools/list"}`)
					done <- body
				}()
				var body string
				select {
				case body = <-done:
				case <-ctx.Done():
					t.Fatalf("id %s: no answer", tc.id)
				}
				if tc.refused {
					if !strings.Contains(body, `"error"`) || errorCode(t, dataOf(body)) != intercept.CodeInvalidRequest {
						t.Errorf("id %s: got %.300s, want -32600 (the server reads another id)", tc.id, body)
					}
					return
				}
				if strings.Contains(body, "send_email") {
					t.Errorf("id %s: the answer was not screened: send_email shown: %.200s", tc.id, body)
				}
				if !strings.Contains(body, `"echo"`) {
					t.Errorf("id %s: got %.300s, want the tools list", tc.id, body)
				}
			})
		}
	}
}

// dataOf returns the data of the first SSE event in body, or body.
func dataOf(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			return strings.TrimSpace(d)
		}
	}
	return strings.TrimSpace(body)
}

// TestHelperRespellingStdio is an MCP server on stdio, run as a child
// process by TestUpstreamIDRespelled; on its own it does nothing. It
// logs a line to stdout before every answer (a common mistake) and
// answers a request with a number id with that id spelled with a
// fraction (7 as 7.0), which Go's and JavaScript's MCP clients read as
// the id they sent.
func TestHelperRespellingStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_RESPELLING_STDIO") != "1" {
		return
	}
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) == nil && req.ID != nil {
			id := string(req.ID)
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"respelling","version":"1"}}`
			case "tools/list":
				os.Stdout.WriteString("server: listing tools\n")
				if !strings.HasPrefix(id, `"`) {
					id += ".0"
				}
				result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"send_email","inputSchema":{"type":"object"}}]}`
			case "tools/call":
				result = `{"content":[{"type":"text","text":"paired"}]}`
				if !strings.HasPrefix(id, `"`) {
					id += ".0"
					result = `{"content":[{"type":"text","text":"a result nobody screened"}]}`
				}
			default:
				result = `{}`
			}
			os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":` + result + "}\n")
		}
		if err != nil {
			os.Exit(0) // before the test framework writes to stdout
		}
	}
}

// TestUpstreamIDRespelled: an upstream that answers a tools/list under
// another spelling of its id, one the client's SDK pairs with its request
// (7.0 for 7), and that writes a line of log to stdout first, neither
// crashes the gateway nor has its list shown unscreened: the client sees
// no send_email, which the gateway hides.
func TestUpstreamIDRespelled(t *testing.T) {
	tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "odd", Command: os.Args[0], Args: []string{"-test.run=^TestHelperRespellingStdio$"}, Env: map[string]string{"SLUICE_TEST_RESPELLING_STDIO": "1"}},
	}, Metrics: tp.Metrics()}, &intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/odd"
	hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
	for _, id := range []string{`"s"`, `7`} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		var body []byte
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ = io.ReadAll(resp.Body) // cut short by ctx when no answer comes
			resp.Body.Close()
		}
		cancel()
		if strings.Contains(string(body), "send_email") {
			t.Errorf("id %s: the upstream's list was shown unscreened: %s", id, body)
		}
		if id == `"s"` && !strings.Contains(string(body), `"echo"`) {
			t.Errorf("id %s: got %q (%v), want the screened list", id, body, err)
		}
	}
	// The same on /ws, where the relay carries the upstream's messages:
	// a respelled answer goes nowhere (a tools/call result the gateway
	// cannot pair would reach the client unscanned), the next one comes.
	ws, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/odd", http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":{}}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("/ws: no answer to \"s\": %v", err)
		}
		if strings.Contains(string(b), "send_email") || strings.Contains(string(b), "nobody screened") {
			t.Errorf("/ws: an answer the gateway could not pair was passed on: %s", b)
		}
		if strings.Contains(string(b), `"id":"s"`) {
			break
		}
	}
	// Every message not delivered is counted; the log says so once per
	// connection (the bridge and the /ws relay), not once per line.
	rec := httptest.NewRecorder()
	tp.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	m := regexp.MustCompile(`sluice_messages_withheld_total\{[^}]*reason="unreadable"[^}]*\} (\d+)`).FindStringSubmatch(rec.Body.String())
	if n := 0; m != nil {
		n, _ = strconv.Atoi(m[1])
		if n < 4 {
			t.Errorf("%d unreadable messages counted, want at least 4 (a log line before each list, a respelled list, a respelled result)", n)
		}
	} else {
		t.Errorf("/metrics has no count of unreadable messages:\n%.3000s", rec.Body.String())
	}
	if n := strings.Count(logs.String(), "not JSON-RPC as the gateway reads them"); n != 2 {
		t.Errorf("%d log lines of undelivered messages, want 2 (one per connection within 10 s):\n%s", n, logs.String())
	}
}

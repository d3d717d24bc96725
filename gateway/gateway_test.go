package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// recorder counts what reaches an upstream.
type recorder struct {
	next  http.Handler
	mu    sync.Mutex
	posts [][]byte
	n     atomic.Int64
	// waiting, if set, is closed when tapServer's wait tool first runs.
	waiting  chan struct{}
	waitOnce sync.Once
}

// count is how many POSTs that reached the upstream contain s.
func (rc *recorder) count(s string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, p := range rc.posts {
		if bytes.Contains(p, []byte(s)) {
			n++
		}
	}
	return n
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.posts = append(rc.posts, b)
		rc.mu.Unlock()
		rc.n.Add(1)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	rc.next.ServeHTTP(w, r)
}

type fixture struct {
	gw       *httptest.Server
	upstream *httptest.Server
	rec      *recorder
	g        *Gateway
}

func newFixture(t *testing.T, dec intercept.Decider, opts Options) *fixture {
	t.Helper()
	rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	opts.Upstreams = append(opts.Upstreams, Upstream{Name: "demo", URL: up.URL + "/mcp"}, Upstream{Name: "other", URL: up.URL + "/mcp"})
	g, err := New(opts, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return &fixture{gw: gw, upstream: up, rec: rec, g: g}
}

var allowEcho = &intercept.StaticDecider{Allow: []string{"echo", "add", "slow_count"}, Deny: []string{"send_email"}, Mode: intercept.ModeToolResult}

// post sends body to route with MCP headers and returns status and body.
func post(t *testing.T, url string, hdr map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	// Under the test's context: a post still waiting when its test ends
	// (one sent from a goroutine, the test failing before its answer
	// came) is given up, and the gateway's handler with it, rather than
	// keeping the gateway's server, closed in the test's cleanup, waiting
	// for it.
	resp, err := sendPost(t.Context(), url, hdr, body)
	if err != nil {
		if t.Context().Err() != nil {
			return 0, http.Header{}, ""
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// sendPost sends body to url as an MCP client does (JSON, accepting JSON
// or an event stream) with the headers hdr, and returns the answer
// unread. Unlike post and openPost it may run off the test's goroutine.
func sendPost(ctx context.Context, url string, hdr map[string]string, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

func modernCall(id int, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func errorCode(t *testing.T, body string) int {
	t.Helper()
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &r); err != nil || r.Error == nil {
		t.Fatalf("body %q is not a JSON-RPC error: %v", body, err)
	}
	return r.Error.Code
}

func TestModernCallAllowedAndDenied(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"hi"}`))
	if status != 200 || !strings.Contains(body, "Echo: hi") {
		t.Fatalf("allowed call: got %d %s, want 200 with Echo: hi", status, body)
	}
	before := f.rec.n.Load()
	status, _, body = post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "send_email"), modernCall(2, "send_email", `{"to":"a@b","subject":"s","body":"b"}`))
	if status != 200 || !strings.Contains(body, `"status":"denied"`) || !strings.Contains(body, `"isError":true`) {
		t.Fatalf("denied call: got %d %s, want a denied tool result", status, body)
	}
	if got := f.rec.n.Load(); got != before {
		t.Errorf("denied call reached the upstream: %d posts, want %d", got, before)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, allowEcho, Options{MaxBodyBytes: 1024})
	call := modernCall(1, "echo", `{"message":"hi"}`)
	tests := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   int
	}{
		{"malformed", nil, `{"jsonrpc":`, 400, intercept.CodeParseError},
		{"not json-rpc", nil, `{"hello":"world"}`, 400, intercept.CodeInvalidRequest},
		{"too big", nil, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, 413, intercept.CodeInvalidRequest},
		{"duplicate keys", modernHeaders("tools/call", "echo"), strings.Replace(call, `"name":"echo"`, `"name":"echo","name":"send_email"`, 1), 400, intercept.CodeInvalidRequest},
		{"case variant key", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"send_email"}}`, 400, intercept.CodeInvalidRequest},
		{"invalid utf8", modernHeaders("tools/call", "echo"), strings.Replace(call, `"hi"`, "\"h\xffi\"", 1), 400, intercept.CodeParseError},
		{"batch without version", nil, `[` + call + `]`, 200, intercept.CodeInvalidRequest},
		{"method header mismatch", modernHeaders("tools/list", ""), call, 400, intercept.CodeHeaderMismatch},
		{"name header mismatch", modernHeaders("tools/call", "add"), call, 400, intercept.CodeHeaderMismatch},
		{"missing method header", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, call, 400, intercept.CodeHeaderMismatch},
		{"version header mismatch", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, call, 400, intercept.CodeHeaderMismatch},
		{"base64 name header mismatch", modernHeaders("tools/call", "=?base64?c2VuZF9lbWFpbA==?="), call, 400, intercept.CodeHeaderMismatch},
		// A session not here is 404 with the reason as text (code 0), which
		// every SDK's client takes as its session gone (TestGoSDKSessionGone).
		{"unknown session", map[string]string{"Mcp-Session-Id": "nope"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.rec.n.Load()
			status, _, body := post(t, f.gw.URL+"/mcp/demo", tt.hdr, tt.body)
			if status != tt.status {
				t.Errorf("status: got %d, want %d (%s)", status, tt.status, body)
			}
			if tt.code == 0 {
				if !strings.HasPrefix(body, "session not found") {
					t.Errorf("body: got %q, want the reason as text", body)
				}
			} else if got := errorCode(t, body); got != tt.code {
				t.Errorf("code: got %d, want %d (%s)", got, tt.code, body)
			}
			if got := f.rec.n.Load(); got != before {
				t.Errorf("rejected request reached the upstream")
			}
		})
	}
}

func TestBase64NameHeaderAccepted(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "=?base64?ZWNobw==?="), modernCall(1, "echo", `{"message":"b64"}`))
	if status != 200 || !strings.Contains(body, "Echo: b64") {
		t.Fatalf("got %d %s, want the echo result", status, body)
	}
}

func TestHostAndOrigin(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"rebinding host", "evil.example", "", 403},
		{"foreign origin", "", "http://evil.example", 403},
		{"loopback origin", "", "http://localhost:3000", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, f.gw.URL+"/healthz", nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestUpstreamDown(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "gone", URL: "http://127.0.0.1:1/mcp"}}}, &intercept.Interceptor{Decider: allowEcho}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gw := httptest.NewServer(g.Handler())
	defer gw.Close()
	status, _, body := post(t, gw.URL+"/mcp/gone", modernHeaders("tools/call", "echo"), modernCall(9, "echo", `{"message":"x"}`))
	if status != 502 || errorCode(t, body) != intercept.CodeUpstreamError || !strings.Contains(body, `gone`) || !strings.Contains(body, `"id":9`) {
		t.Errorf("got %d %s, want 502 with -32003 naming upstream gone for id 9", status, body)
	}
	resp, err := http.Get(gw.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("readyz: got %d, want 503", resp.StatusCode)
	}
}

// initialize opens a 2025-11-25 session through the gateway and returns
// the session id the gateway issued.
func initialize(t *testing.T, url string) string {
	t.Helper()
	status, hdr, body := post(t, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != 200 || !strings.Contains(body, "protocolVersion") {
		t.Fatalf("initialize: got %d %s", status, body)
	}
	sid := hdr.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id from the gateway")
	}
	post(t, url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func TestSessionMapping(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	sid := initialize(t, f.gw.URL+"/mcp/demo")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	status, _, body := post(t, f.gw.URL+"/mcp/demo", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"s"}}}`)
	if status != 200 || !strings.Contains(body, "Echo: s") {
		t.Fatalf("call in session: got %d %s", status, body)
	}
	// The upstream never sees the gateway's id, and the client never sees the upstream's.
	f.rec.mu.Lock()
	for _, p := range f.rec.posts {
		if bytes.Contains(p, []byte(sid)) {
			t.Errorf("gateway session id leaked upstream")
		}
	}
	f.rec.mu.Unlock()
	// The same id on another route is unknown there.
	status, _, _ = post(t, f.gw.URL+"/mcp/other", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if status != 404 {
		t.Errorf("session replayed on another route: got %d, want 404", status)
	}
	// Batches are not part of 2025-11-25: rejected, never forwarded.
	before := f.rec.n.Load()
	status, _, body = post(t, f.gw.URL+"/mcp/demo", hdr, `[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_email","arguments":{}}}]`)
	if errorCode(t, body) != intercept.CodeInvalidRequest || f.rec.n.Load() != before {
		t.Errorf("batch: got %d %s, want -32600 and nothing forwarded", status, body)
	}
	// DELETE ends it.
	req, _ := http.NewRequest(http.MethodDelete, f.gw.URL+"/mcp/demo", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status, _, _ = post(t, f.gw.URL+"/mcp/demo", hdr, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if status != 404 {
		t.Errorf("after DELETE: got %d, want 404", status)
	}
}

func TestToolsListObserved(t *testing.T) {
	var got *intercept.ActionDescriptor
	dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		got = d
		return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
	})
	f := newFixture(t, dec, Options{})
	sid := initialize(t, f.gw.URL+"/mcp/demo")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, f.gw.URL+"/mcp/demo", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	post(t, f.gw.URL+"/mcp/demo", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"d"}}}`)
	if got == nil || got.ToolDescription == "" || got.ToolInventoryHash == "" || got.Agent != "raw" || got.SessionID != telemetry.SessionRef(sid) || got.Upstream != "demo" || got.ProtocolVersion != "2025-11-25" {
		t.Errorf("descriptor: got %+v", got)
	}
}

// untilReleased waits until release is closed or t ends: a handler or
// decider a test holds on release must not outlive a test that failed
// before releasing it, or the servers' Close in t's cleanups waits for
// it, and the whole package hangs until its timeout, naming no test.
// (t.Context is cancelled before the cleanups run.)
func untilReleased(t *testing.T, release <-chan struct{}) {
	select {
	case <-release:
	case <-t.Context().Done():
	}
}

// tell sends v on ch, or gives up once t has ended: a handler, hook or
// tool of a test's upstream or gateway telling the test what happened
// must not wait for ever on a test that stopped listening (it failed, or
// took another path, or the event came more often than it counted on),
// or the server's Close in the test's cleanup waits for it in turn.
func tell[T any](t testing.TB, ch chan<- T, v T) {
	select {
	case ch <- v:
	case <-t.Context().Done():
	}
}

// closeServed closes srv, the test server of g's handler, then g, as a
// test's cleanup does: the server first, g's handlers running on while it
// waits for them. A handler still running handlerGrace after its test
// ended is a hang, the test's or the gateway's: rather than leave the
// package hanging until go test's timeout, which names no test (a
// cleanup is not one), the test fails, naming it, with every goroutine's
// stack on stderr; then the clients' connections are closed and g closed
// under the server, and the test goes on without it if even that does
// not let its Close return.
func closeServed(t testing.TB, srv *httptest.Server, g *Gateway) {
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		srv.Close()
	}()
	grace := time.NewTimer(handlerGrace)
	defer grace.Stop()
	select {
	case <-closed:
		g.Close()
		return
	case <-grace.C:
	}
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "=== %s: the gateway's test server still waits for a handler %v after the test ended; goroutines:\n%s\n=== end of %s's goroutines\n", t.Name(), handlerGrace, buf, t.Name())
	t.Errorf("the gateway's test server still waited for a handler %v after the test ended (goroutines on stderr)", handlerGrace)
	srv.CloseClientConnections()
	go g.Close()
	grace.Reset(handlerGrace)
	select {
	case <-closed:
	case <-grace.C:
		t.Errorf("the gateway's test server still waited for a handler %v after its clients' connections were closed and the gateway too", handlerGrace)
	}
}

// handlerGrace is how long after its test ended closeServed waits for the
// gateway's handlers: longer than any of them may rightly take then (a
// write stalled for the default write_stall_timeout, 30 s).
const handlerGrace = time.Minute

package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"
)

// httpTestCtx bounds a test's waits, so that a message that never comes fails
// the test instead of hanging it.
func httpTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type httpMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func httpRead(t *testing.T, ctx context.Context, c Conn) httpMsg {
	t.Helper()
	b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var m httpMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Read returned %q: %v", b, err)
	}
	return m
}

// httpCall sends a request and reads until its response, which it returns
// with the messages read before it.
func httpCall(t *testing.T, ctx context.Context, c Conn, id int, method, params string) (httpMsg, []httpMsg) {
	t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	if err := c.Write(ctx, []byte(msg)); err != nil {
		t.Fatalf("Write %s: %v", method, err)
	}
	var others []httpMsg
	for {
		m := httpRead(t, ctx, c)
		if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
			return m, others
		}
		others = append(others, m)
	}
}

func httpNotify(t *testing.T, ctx context.Context, c Conn, method string) {
	t.Helper()
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"`+method+`"}`)); err != nil {
		t.Fatalf("Write %s: got %v, want nil", method, err)
	}
}

func httpWantResult(t *testing.T, m httpMsg) {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("response %s: got error %d %q, want a result", m.ID, m.Error.Code, m.Error.Message)
	}
}

// httpToolText returns the text of the first content of a tools/call result.
func httpToolText(t *testing.T, m httpMsg) string {
	t.Helper()
	httpWantResult(t, m)
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("tools/call result %s: want text content", m.Result)
	}
	return r.Content[0].Text
}

// httpRecorder wraps a handler and records the requests it sees and the
// status and content type of each response.
type httpRecorder struct {
	next http.Handler
	gets chan *httpRecorded // each GET, once its status is known

	mu   sync.Mutex // guards reqs and the recorded values
	reqs []*httpRecorded
}

type httpRecorded struct {
	method      string
	header      http.Header
	rpcMethod   string
	status      int
	contentType string
}

func httpNewRecorder(next http.Handler) *httpRecorder {
	return &httpRecorder{next: next, gets: make(chan *httpRecorded, 64)}
}

func (rec *httpRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m httpMsg
	_ = json.Unmarshal(body, &m)
	rr := &httpRecorded{method: r.Method, header: r.Header.Clone(), rpcMethod: m.Method}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, rr)
	rec.mu.Unlock()
	rec.next.ServeHTTP(&httpRecWriter{ResponseWriter: w, rec: rec, rr: rr}, r)
}

// requests returns a copy of what has been recorded so far.
func (rec *httpRecorder) requests() []httpRecorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []httpRecorded
	for _, r := range rec.reqs {
		out = append(out, *r)
	}
	return out
}

func (rec *httpRecorder) find(method, rpcMethod string) (httpRecorded, bool) {
	for _, r := range rec.requests() {
		if r.method == method && r.rpcMethod == rpcMethod {
			return r, true
		}
	}
	return httpRecorded{}, false
}

type httpRecWriter struct {
	http.ResponseWriter
	rec         *httpRecorder
	rr          *httpRecorded
	wroteHeader bool
}

func (w *httpRecWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	w.rec.mu.Lock()
	w.rr.status, w.rr.contentType = code, w.Header().Get("Content-Type")
	w.rec.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
	if w.rr.method == http.MethodGet {
		w.rec.gets <- w.rr
	}
}

func (w *httpRecWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *httpRecWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	w.ResponseWriter.(http.Flusher).Flush()
}

// httpTestMCPServer returns an MCP server with tools: echo (and the same
// under a name that is not ASCII), and progress, which sends a progress
// notification and then, if gate is not nil, waits for it to close before
// it answers.
func httpTestMCPServer(gate chan struct{}) *server.MCPServer {
	s := server.NewMCPServer("sluice-test", "1.0.0", server.WithToolCapabilities(false), server.WithLogging())
	echo := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	}
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required())), echo)
	s.AddTool(mcp.NewTool("grüße", mcp.WithString("text")), echo)
	s.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": "p1", "progress": 1, "total": 2})
		if err != nil {
			return nil, err
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return mcp.NewToolResultText("done"), nil
	})
	return s
}

var httpQuietLogger = slog.New(slog.DiscardHandler)

func httpDial(t *testing.T, d Dialer) Conn {
	t.Helper()
	c, err := d.Dial(httpTestCtx(t))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return c
}

const httpInitParams = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sluice-test","version":"0"}}`

// TestStreamableHTTPDialerMCPGo runs a session against mcp-go's
// Streamable HTTP server, which answers with JSON until it has
// notifications to send and then with an SSE stream.
func TestStreamableHTTPDialerMCPGo(t *testing.T) {
	tests := []struct {
		name    string
		opts    []server.StreamableHTTPOption
		wantGET int // status of the standalone GET stream
	}{
		{name: "with GET stream", wantGET: http.StatusOK},
		{name: "without GET stream", opts: []server.StreamableHTTPOption{server.WithDisableStreaming(true)}, wantGET: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			gate := make(chan struct{})
			srv := httpTestMCPServer(gate)
			opts := append([]server.StreamableHTTPOption{server.WithStreamableHTTPLogger(httpQuietLogger)}, tt.opts...)
			rec := httpNewRecorder(server.NewStreamableHTTPServer(srv, opts...))
			ts := httptest.NewServer(rec)
			defer ts.Close()
			ctx := httpTestCtx(t)
			c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL + "/mcp", Header: http.Header{"X-Sluice-Test": {"1"}}})
			defer c.Close()

			res, _ := httpCall(t, ctx, c, 1, "initialize", httpInitParams)
			httpWantResult(t, res)
			var init struct{ ProtocolVersion string }
			json.Unmarshal(res.Result, &init)
			if init.ProtocolVersion != "2025-06-18" {
				t.Fatalf("protocolVersion: got %q, want 2025-06-18", init.ProtocolVersion)
			}
			httpNotify(t, ctx, c, "notifications/initialized")

			res, _ = httpCall(t, ctx, c, 2, "tools/list", `{}`)
			httpWantResult(t, res)
			var list struct{ Tools []struct{ Name string } }
			json.Unmarshal(res.Result, &list)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if got, want := strings.Join(names, ","), "echo,grüße,progress"; got != want {
				t.Errorf("tools: got %s, want %s", got, want)
			}

			res, _ = httpCall(t, ctx, c, 3, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
			if got := httpToolText(t, res); got != "hi" {
				t.Errorf("echo: got %q, want hi", got)
			}

			var get *httpRecorded
			select {
			case get = <-rec.gets:
			case <-ctx.Done():
				t.Fatal("no GET stream was opened")
			}
			if get.status != tt.wantGET {
				t.Errorf("GET status: got %d, want %d", get.status, tt.wantGET)
			}
			if tt.wantGET == http.StatusOK {
				srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "via GET"})
				if m := httpRead(t, ctx, c); m.Method != "notifications/message" {
					t.Errorf("on the GET stream: got %s %s, want notifications/message", m.Method, m.Params)
				}
			}

			// The tool holds its response back until its notification
			// has come out of Read: the response stream is read as it
			// arrives. (The server may send the notification on the GET
			// stream instead, when there is one.)
			progress := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}}`
			if err := c.Write(ctx, []byte(progress)); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if m := httpRead(t, ctx, c); m.Method != "notifications/progress" {
				t.Errorf("got %s %s, want notifications/progress", m.Method, m.ID)
			}
			close(gate)
			if res := httpRead(t, ctx, c); httpToolText(t, res) != "done" || string(res.ID) != "4" {
				t.Errorf("progress: got %s %s, want the result for 4", res.ID, res.Result)
			}

			if err := c.Close(); err != nil {
				t.Errorf("Close: got %v, want nil", err)
			}
			if _, err := c.Read(ctx); err != ErrClosed {
				t.Errorf("Read after Close: got %v, want ErrClosed", err)
			}
			if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"x"}`)); err != ErrClosed {
				t.Errorf("Write after Close: got %v, want ErrClosed", err)
			}

			httpCheckHeaders(t, rec)
			for rpcMethod, want := range map[string]string{
				"initialize": "application/json",
				"tools/list": "application/json",
				"tools/call": "application/json", // echo, the first one
			} {
				if r, _ := rec.find(http.MethodPost, rpcMethod); r.contentType != want {
					t.Errorf("%s response content type: got %q, want %q", rpcMethod, r.contentType, want)
				}
			}
			if r := rec.requests(); r[len(r)-1].method != http.MethodDelete {
				t.Errorf("last request: got %s, want DELETE", r[len(r)-1].method)
			}
			var sse bool
			for _, r := range rec.requests() {
				sse = sse || (r.rpcMethod == "tools/call" && r.contentType == "text/event-stream")
			}
			if !sse {
				t.Errorf("no tools/call was answered with text/event-stream")
			}
		})
	}
}

// httpCheckHeaders checks the headers of a recorded session that
// started with initialize.
func httpCheckHeaders(t *testing.T, rec *httpRecorder) {
	t.Helper()
	reqs := rec.requests()
	if len(reqs) == 0 || reqs[0].rpcMethod != "initialize" {
		t.Fatalf("first request: want initialize")
	}
	sid := ""
	for i, r := range reqs {
		h := r.header
		if got := h.Get("X-Sluice-Test"); got != "1" {
			t.Errorf("request %d (%s %s): X-Sluice-Test: got %q, want 1", i, r.method, r.rpcMethod, got)
		}
		if i == 0 {
			if h.Get(httpHeaderSessionID) != "" || h.Get(httpHeaderProtocolVersion) != "" {
				t.Errorf("initialize: got session %q and version %q, want neither", h.Get(httpHeaderSessionID), h.Get(httpHeaderProtocolVersion))
			}
			if got, want := h.Get("Accept"), "application/json, text/event-stream"; got != want {
				t.Errorf("initialize Accept: got %q, want %q", got, want)
			}
			if got := h.Get("Content-Type"); got != "application/json" {
				t.Errorf("initialize Content-Type: got %q, want application/json", got)
			}
			continue
		}
		if sid == "" {
			sid = h.Get(httpHeaderSessionID)
		}
		if got := h.Get(httpHeaderSessionID); got == "" || got != sid {
			t.Errorf("request %d (%s %s): session id: got %q, want %q", i, r.method, r.rpcMethod, got, sid)
		}
		if got := h.Get(httpHeaderProtocolVersion); got != "2025-06-18" {
			t.Errorf("request %d (%s %s): protocol version: got %q, want 2025-06-18", i, r.method, r.rpcMethod, got)
		}
		if r.method == http.MethodGet && h.Get("Accept") != "text/event-stream" {
			t.Errorf("GET Accept: got %q, want text/event-stream", h.Get("Accept"))
		}
		if h.Get(httpHeaderMethod) != "" {
			t.Errorf("request %d: got Mcp-Method %q for a session protocol version, want none", i, h.Get(httpHeaderMethod))
		}
	}
}

// TestStreamableHTTPDialerStateless sends requests of protocol version
// 2026-07-28, which has no sessions but requires Mcp-Method and Mcp-Name;
// mcp-go checks both against the body.
func TestStreamableHTTPDialerStateless(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	rec := httpNewRecorder(server.NewStreamableHTTPServer(httpTestMCPServer(nil)))
	ts := httptest.NewServer(rec)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL + "/mcp"})
	defer c.Close()

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`
	tests := []struct {
		tool, wantName string
	}{
		{"echo", "echo"},
		{"grüße", "=?base64?Z3LDvMOfZQ==?="},
	}
	for i, tt := range tests {
		res, _ := httpCall(t, ctx, c, 10+i, "tools/call", `{"name":"`+tt.tool+`","arguments":{"text":"hi"},`+meta+`}`)
		if got := httpToolText(t, res); got != "hi" {
			t.Errorf("%s: got %q, want hi", tt.tool, got)
		}
		reqs := rec.requests()
		h := reqs[len(reqs)-1].header
		for name, want := range map[string]string{
			httpHeaderMethod:          "tools/call",
			httpHeaderName:            tt.wantName,
			httpHeaderProtocolVersion: "2026-07-28",
			httpHeaderSessionID:       "",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %s: got %q, want %q", tt.tool, name, got, want)
			}
		}
	}
	c.Close()
	for _, r := range rec.requests() {
		if r.method != http.MethodPost {
			t.Errorf("got a %s, want only POSTs without a session", r.method)
		}
	}
}

func TestHTTPEncodeHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"echo", "echo"},
		{"file:///tmp/a b.txt", "file:///tmp/a b.txt"},
		{"", ""},
		{" lead", "=?base64?IGxlYWQ=?="},
		{"trail\t", "=?base64?dHJhaWwJ?="},
		{"grüße", "=?base64?Z3LDvMOfZQ==?="},
		{"a\nb", "=?base64?YQpi?="},
		{"=?base64?eA==?=", "=?base64?PT9iYXNlNjQ/ZUE9PT89?="},
	}
	for _, tt := range tests {
		if got := httpEncodeHeaderValue(tt.in); got != tt.want {
			t.Errorf("httpEncodeHeaderValue(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// httpErrorBody is a JSON-RPC error response as servers put in HTTP errors.
const httpErrorBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"boom"}}`

func TestStreamableHTTPDialerErrorStatus(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        []string // in the error message
	}{
		{"JSON-RPC body", http.StatusInternalServerError, "application/json", httpErrorBody, []string{"HTTP 500 Internal Server Error: boom"}},
		{"text body", http.StatusServiceUnavailable, "text/plain; charset=utf-8", "overloaded\n", []string{"HTTP 503 Service Unavailable: overloaded"}},
		{"no body", http.StatusNotFound, "", "", []string{"HTTP 404 Not Found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			ctx := httpTestCtx(t)
			c := httpDial(t, &StreamableHTTPDialer{URL: strings.Replace(ts.URL, "http://", "http://user:secret@", 1) + "/mcp?token=secret"})
			defer c.Close()

			res, _ := httpCall(t, ctx, c, 7, "tools/list", `{}`)
			if res.Error == nil {
				t.Fatalf("got result %s, want an error", res.Result)
			}
			if res.Error.Code != UpstreamErrorCode {
				t.Errorf("code: got %d, want %d", res.Error.Code, UpstreamErrorCode)
			}
			msg := res.Error.Message
			for _, want := range append(tt.want, ts.URL+"/mcp") {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q: want it to contain %q", msg, want)
				}
			}
			if strings.Contains(msg, "secret") || strings.Contains(string(res.Error.Data), "secret") {
				t.Errorf("message %q, data %s: want no credentials or query", msg, res.Error.Data)
			}
			var data struct{ HTTPStatus int }
			json.Unmarshal(res.Error.Data, &data)
			if data.HTTPStatus != tt.status {
				t.Errorf("data.httpStatus: got %d, want %d", data.HTTPStatus, tt.status)
			}

			err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			var serr *HTTPStatusError
			if !errors.As(err, &serr) || serr.StatusCode != tt.status {
				t.Errorf("Write of a notification: got %v, want an HTTPStatusError with status %d", err, tt.status)
			}
		})
	}
}

func TestStreamableHTTPDialerBatch(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, httpErrorBody)
	}))
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL})
	defer c.Close()
	if err := c.Write(ctx, []byte(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var got []httpMsg
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("got %s, want a batch: %v", b, err)
	}
	if len(got) != 2 || string(got[0].ID) != `"a"` || string(got[1].ID) != "2" || got[0].Error == nil || got[1].Error == nil {
		t.Errorf("got %s, want errors for ids \"a\" and 2", b)
	}
}

func TestStreamableHTTPDialerUnreachable(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: url})
	defer c.Close()
	res, _ := httpCall(t, ctx, c, 1, "initialize", httpInitParams)
	if res.Error == nil || res.Error.Code != UpstreamErrorCode || !strings.Contains(res.Error.Message, "unreachable") {
		t.Errorf("got %+v, want an unreachable error", res.Error)
	}
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err == nil {
		t.Errorf("Write of a notification: got nil, want an error")
	}
}

func TestStreamableHTTPDialerBadInput(t *testing.T) {
	for _, u := range []string{"", "ftp://x/mcp", "/mcp", "http://"} {
		if _, err := (&StreamableHTTPDialer{URL: u}).Dial(t.Context()); err == nil {
			t.Errorf("Dial(%q): got nil error, want one", u)
		}
	}
	c := httpDial(t, &StreamableHTTPDialer{URL: "http://127.0.0.1:1/"})
	defer c.Close()
	for _, msg := range []string{"", "nope", `"str"`, "{"} {
		if err := c.Write(t.Context(), []byte(msg)); err == nil {
			t.Errorf("Write(%q): got nil error, want one", msg)
		}
	}
}

// httpScripted is a scripted Streamable HTTP server: it answers initialize
// and notifications, and hands each GET and each other POST to the test.
type httpScripted struct {
	gets  chan *http.Request // each GET; the test answers through getW
	getW  chan func(w http.ResponseWriter, r *http.Request)
	posts chan func(w http.ResponseWriter, r *http.Request, m httpMsg)
}

func (h *httpScripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		select {
		case h.gets <- r:
		case <-r.Context().Done():
			return
		}
		select {
		case f := <-h.getW:
			f(w, r)
		case <-r.Context().Done():
		}
		return
	}
	var m httpMsg
	json.NewDecoder(r.Body).Decode(&m)
	switch {
	case m.Method == "initialize":
		w.Header().Set(httpHeaderSessionID, "s1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25"}}`, m.ID)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		select {
		case f := <-h.posts:
			f(w, r, m)
		case <-r.Context().Done():
		}
	}
}

func httpNewScripted() *httpScripted {
	return &httpScripted{
		gets:  make(chan *http.Request),
		getW:  make(chan func(http.ResponseWriter, *http.Request)),
		posts: make(chan func(http.ResponseWriter, *http.Request, httpMsg), 1),
	}
}

func sseWriteEvents(w http.ResponseWriter, evs ...SSEEvent) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	for _, ev := range evs {
		WriteSSEEvent(w, ev)
	}
	w.(http.Flusher).Flush()
}

func httpInitSession(t *testing.T, ctx context.Context, c Conn) {
	t.Helper()
	res, _ := httpCall(t, ctx, c, 1, "initialize", httpInitParams)
	httpWantResult(t, res)
	httpNotify(t, ctx, c, "notifications/initialized")
}

// TestStreamableHTTPDialerGETReconnect drops the standalone GET stream and
// expects the client to come back with Last-Event-ID.
func TestStreamableHTTPDialerGETReconnect(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := httpNewScripted()
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL})
	defer c.Close()
	httpInitSession(t, ctx, c)

	r := <-h.gets
	if got := r.Header.Get(httpHeaderLastEventID); got != "" {
		t.Errorf("first GET: Last-Event-ID: got %q, want none", got)
	}
	if got := r.Header.Get(httpHeaderSessionID); got != "s1" {
		t.Errorf("first GET: session: got %q, want s1", got)
	}
	h.getW <- func(w http.ResponseWriter, r *http.Request) {
		sseWriteEvents(w, SSEEvent{ID: "e5", Retry: "1", Data: []byte(`{"jsonrpc":"2.0","method":"first"}`)})
	}
	if m := httpRead(t, ctx, c); m.Method != "first" {
		t.Errorf("got %q, want first", m.Method)
	}

	r = <-h.gets
	if got := r.Header.Get(httpHeaderLastEventID); got != "e5" {
		t.Errorf("second GET: Last-Event-ID: got %q, want e5", got)
	}
	h.getW <- func(w http.ResponseWriter, r *http.Request) {
		sseWriteEvents(w,
			SSEEvent{Data: []byte(`{"jsonrpc":"2.0","method":"second"}`)},
			SSEEvent{Event: "other", Data: []byte(`{"jsonrpc":"2.0","method":"not delivered"}`)},
			SSEEvent{ID: "e6", Data: nil}, // a priming event: no message
			SSEEvent{Data: []byte(`{"jsonrpc":"2.0","method":"third"}`)},
		)
		<-r.Context().Done()
	}
	for _, want := range []string{"second", "third"} {
		if m := httpRead(t, ctx, c); m.Method != want {
			t.Errorf("got %q, want %q", m.Method, want)
		}
	}
	c.Close()
}

// TestStreamableHTTPDialerResponseStream checks that events of a response
// stream are delivered as they arrive, and that a stream that breaks
// before the response is resumed, or else answered with an error.
func TestStreamableHTTPDialerResponseStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := httpNewScripted()
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL})
	defer c.Close()
	httpInitSession(t, ctx, c)
	<-h.gets
	h.getW <- func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }

	// Streamed: the response is only sent once the notification before it
	// has come out of Read.
	release := make(chan struct{})
	h.posts <- func(w http.ResponseWriter, r *http.Request, m httpMsg) {
		sseWriteEvents(w, SSEEvent{Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)})
		<-release
		sseWriteEvents(w, SSEEvent{Data: fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)})
	}
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if m := httpRead(t, ctx, c); m.Method != "notifications/progress" {
		t.Fatalf("got %q, want notifications/progress", m.Method)
	}
	close(release)
	if m := httpRead(t, ctx, c); string(m.ID) != "2" {
		t.Fatalf("got id %s, want 2", m.ID)
	}

	// Resumed: the stream breaks after event r1, and the response comes on
	// the GET that resumes it.
	h.posts <- func(w http.ResponseWriter, r *http.Request, m httpMsg) {
		sseWriteEvents(w, SSEEvent{ID: "r1", Retry: "1", Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)})
	}
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if m := httpRead(t, ctx, c); m.Method != "notifications/progress" {
		t.Fatalf("got %q, want notifications/progress", m.Method)
	}
	r := <-h.gets
	if got := r.Header.Get(httpHeaderLastEventID); got != "r1" {
		t.Errorf("resuming GET: Last-Event-ID: got %q, want r1", got)
	}
	h.getW <- func(w http.ResponseWriter, r *http.Request) {
		sseWriteEvents(w, SSEEvent{ID: "r2", Data: []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)})
		<-r.Context().Done() // the client stops reading once answered
	}
	if m := httpRead(t, ctx, c); string(m.ID) != "3" || m.Error != nil {
		t.Fatalf("got id %s error %v, want the result for 3", m.ID, m.Error)
	}

	// Not resumable: without event ids the request gets an error.
	h.posts <- func(w http.ResponseWriter, r *http.Request, m httpMsg) {
		sseWriteEvents(w, SSEEvent{Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)})
	}
	res, _ := httpCall(t, ctx, c, 4, "tools/call", `{"name":"x"}`)
	if res.Error == nil || !strings.Contains(res.Error.Message, "ended before the response") {
		t.Errorf("got %+v, want a stream-ended error", res.Error)
	}
	c.Close()
}

// TestStreamableHTTPDialerCloseUnblocks checks that Close ends a pending
// Read and an unanswered request, leaving no goroutine behind.
func TestStreamableHTTPDialerCloseUnblocks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := httpNewScripted()
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL})
	httpInitSession(t, ctx, c)
	<-h.gets
	h.getW <- func(w http.ResponseWriter, r *http.Request) {
		sseWriteEvents(w)
		<-r.Context().Done()
	}
	h.posts <- func(w http.ResponseWriter, r *http.Request, m httpMsg) {
		sseWriteEvents(w)
		<-r.Context().Done()
	}
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`)); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error)
	go func() {
		_, err := c.Read(ctx)
		readErr <- err
	}()
	if err := c.Close(); err != nil {
		t.Errorf("Close: got %v, want nil", err)
	}
	if err := <-readErr; err != ErrClosed {
		t.Errorf("pending Read: got %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

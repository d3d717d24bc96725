package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// testTimeout bounds every exchange, so that a hang fails instead of
// running into the test binary's global timeout.
const testTimeout = 10 * time.Second

// startHTTP serves a fresh demo server over Streamable HTTP. wrap, if not
// nil, sits in front of the handler.
func startHTTP(t *testing.T, opts demo.HTTPOptions, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	h := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), opts)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// connect starts an mcp-go Streamable HTTP client against url and runs the
// connection handshake, server/discover first and initialize as fallback.
func connect(t *testing.T, url string, opts ...client.ClientOption) (*client.Client, *transport.StreamableHTTP) {
	t.Helper()
	return connectVia(t, url, http.DefaultClient, opts...)
}

// connectVia is connect with the HTTP client the transport uses.
func connectVia(t *testing.T, url string, hc *http.Client, opts ...client.ClientOption) (*client.Client, *transport.StreamableHTTP) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	trans, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatalf("NewStreamableHTTP: %v", err)
	}
	c := client.NewClient(trans, opts...)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// Registered after srv.Close, so it runs first: a legacy client ends its
	// session with a DELETE, which needs the server still up.
	t.Cleanup(func() { _ = c.Close() })

	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "demo-test", Version: "0.0.0"},
	}})
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if res.ProtocolVersion != c.ProtocolVersion() {
		t.Errorf("InitializeResult.ProtocolVersion = %q, client.ProtocolVersion() = %q; want them equal",
			res.ProtocolVersion, c.ProtocolVersion())
	}
	if res.ServerInfo.Name != demo.DefaultName {
		t.Errorf("serverInfo.name = %q, want %q", res.ServerInfo.Name, demo.DefaultName)
	}
	return c, trans
}

// progressRecorder collects the progress values of notifications/progress.
type progressRecorder struct {
	mu       sync.Mutex
	progress []float64
	onFirst  func()
}

func (r *progressRecorder) handle(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, _ := n.Params.AdditionalFields["progress"].(float64)
	r.progress = append(r.progress, p)
	if len(r.progress) == 1 && r.onFirst != nil {
		r.onFirst()
	}
}

func (r *progressRecorder) values() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress)
}

func callTool(ctx context.Context, c *client.Client, name string, args map[string]any, meta *mcp.Meta) (*mcp.CallToolResult, error) {
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args, Meta: meta}})
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		text, ok := mcp.AsTextContent(c)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, text.Text)
	}
	return strings.Join(parts, "\n")
}

// exercise lists the tools and calls echo and slow_count with progress, the
// checks every negotiated protocol version must pass.
func exercise(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"add", "echo", "read_document", "rotate_description", "send_email", "slow_count", "web_search"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}

	res, err := callTool(ctx, c, demo.ToolEcho, map[string]any{"message": "hello"}, nil)
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got, want := resultText(t, res), "Echo: hello"; got != want {
		t.Errorf("echo = %q, want %q", got, want)
	}

	rec := &progressRecorder{}
	c.OnNotification(rec.handle)
	res, err = callTool(ctx, c, demo.ToolSlowCount,
		map[string]any{"n": 3, "delay_ms": 5}, &mcp.Meta{ProgressToken: "count-1"})
	if err != nil {
		t.Fatalf("slow_count: %v", err)
	}
	if got, want := resultText(t, res), "counted to 3"; got != want {
		t.Errorf("slow_count = %q, want %q", got, want)
	}
	if got, want := rec.values(), []float64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
}

func TestNegotiatesStatelessProtocolByDefault(t *testing.T) {
	srv := startHTTP(t, demo.HTTPOptions{}, nil)
	c, trans := connect(t, srv.URL)

	t.Logf("negotiated protocol version: %s", c.ProtocolVersion())
	if got, want := c.ProtocolVersion(), mcp.ProtocolVersion20260728; got != want {
		t.Fatalf("protocol version = %q, want %q", got, want)
	}
	if id := trans.GetSessionId(); id != "" {
		t.Errorf("session ID = %q, want none on %s", id, mcp.ProtocolVersion20260728)
	}
	exercise(t, c)
}

func TestNegotiatesPinnedLegacyProtocol(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		t.Run(version, func(t *testing.T) {
			srv := startHTTP(t, demo.HTTPOptions{}, nil)
			c, trans := connect(t, srv.URL, client.WithProtocolVersion(version))

			t.Logf("negotiated protocol version: %s, session %s", c.ProtocolVersion(), trans.GetSessionId())
			if got := c.ProtocolVersion(); got != version {
				t.Fatalf("protocol version = %q, want %q", got, version)
			}
			if trans.GetSessionId() == "" {
				t.Errorf("no Mcp-Session-Id after initialize on %s", version)
			}
			exercise(t, c)
		})
	}
}

// TestFallsBackToInitialize records what makes mcp-go's client give up on
// server/discover and fall back to the initialize handshake: any failure of
// the probe that is not an unsupported-version error naming a modern
// version it could retry with.
func TestFallsBackToInitialize(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
	}{
		{"method not found in 200", http.StatusOK, "application/json",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		{"method not found in 404", http.StatusNotFound, "application/json",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		{"plain 400", http.StatusBadRequest, "text/plain", "Bad Request\n"},
		{"plain 405", http.StatusMethodNotAllowed, "text/plain", "Method Not Allowed\n"},
		{"plain 500", http.StatusInternalServerError, "text/plain", "oops\n"},
		{"unsupported version, legacy only", http.StatusBadRequest, "application/json",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version",` +
				`"data":{"supported":["2025-11-25","2025-06-18"],"requested":"2026-07-28"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var methods []string
			hideDiscover := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					method := peekMethod(t, r)
					mu.Lock()
					methods = append(methods, method)
					mu.Unlock()
					if method == string(mcp.MethodServerDiscover) {
						w.Header().Set("Content-Type", tt.contentType)
						w.WriteHeader(tt.status)
						io.WriteString(w, tt.body)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
			srv := startHTTP(t, demo.HTTPOptions{}, hideDiscover)
			c, _ := connect(t, srv.URL)

			if got, want := c.ProtocolVersion(), mcp.ProtocolVersion20251125; got != want {
				t.Errorf("protocol version = %q, want %q", got, want)
			}
			mu.Lock()
			got := slices.Clone(methods)
			mu.Unlock()
			if want := []string{"server/discover", "initialize", "notifications/initialized"}; !slices.Equal(got, want) {
				t.Errorf("methods sent = %v, want %v", got, want)
			}
		})
	}
}

// TestRetriesDiscoverAtAdvertisedVersion: the one discover failure that does
// not end in the handshake is an unsupported-version error (-32022) whose
// data.supported names a modern version; the client retries server/discover
// at it. The demo server sends that error, with HTTP 400, for a version it
// does not know.
func TestRetriesDiscoverAtAdvertisedVersion(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := peekMethod(t, r)
			mu.Lock()
			sent = append(sent, method+" "+r.Header.Get("Mcp-Protocol-Version"))
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	srv := startHTTP(t, demo.HTTPOptions{}, record)
	c, _ := connect(t, srv.URL, client.WithProtocolVersion("2099-01-01"))

	if got, want := c.ProtocolVersion(), mcp.ProtocolVersion20260728; got != want {
		t.Errorf("protocol version = %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"server/discover 2099-01-01", "server/discover 2026-07-28"}; !slices.Equal(sent, want) {
		t.Errorf("requests = %v, want %v", sent, want)
	}
}

// contentTypes records the Content-Type of the last response to each
// JSON-RPC method.
type contentTypes struct {
	base http.RoundTripper

	mu     sync.Mutex // guards byType
	byType map[string]string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	method := r.Method
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		// A RoundTripper must not modify the request it was given.
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			method = msg.Method
		}
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byType == nil {
		c.byType = make(map[string]string)
	}
	c.byType[method] = resp.Header.Get("Content-Type")
	return resp, nil
}

func (c *contentTypes) of(method string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byType[method]
}

// peekMethod returns the JSON-RPC method of a POST body, leaving the body
// readable for the next handler.
func peekMethod(t *testing.T, r *http.Request) string {
	if r.Method != http.MethodPost {
		return r.Method
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

func TestResponseFormat(t *testing.T) {
	tests := []struct {
		name         string
		opts         demo.HTTPOptions
		wantType     string
		wantProgress []float64
	}{
		{"sse", demo.HTTPOptions{}, "text/event-stream", []float64{1, 2}},
		// With no stream to carry them, progress notifications are dropped.
		{"json", demo.HTTPOptions{JSONResponse: true}, "application/json", nil},
	}
	for _, tt := range tests {
		for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				srv := startHTTP(t, tt.opts, nil)
				// Recorded on the client side: the client has the response
				// headers before it returns, the server's handler may still
				// be running when it does.
				types := &contentTypes{base: http.DefaultTransport}
				c, _ := connectVia(t, srv.URL, &http.Client{Transport: types}, client.WithProtocolVersion(version))
				rec := &progressRecorder{}
				c.OnNotification(rec.handle)

				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				res, err := callTool(ctx, c, demo.ToolSlowCount,
					map[string]any{"n": 2, "delay_ms": 1}, &mcp.Meta{ProgressToken: 7})
				if err != nil {
					t.Fatalf("slow_count: %v", err)
				}
				if got, want := resultText(t, res), "counted to 2"; got != want {
					t.Errorf("slow_count = %q, want %q", got, want)
				}
				if gotType := types.of(string(mcp.MethodToolsCall)); gotType != tt.wantType {
					t.Errorf("Content-Type = %q, want %q", gotType, tt.wantType)
				}
				if got := rec.values(); !slices.Equal(got, tt.wantProgress) {
					t.Errorf("progress = %v, want %v", got, tt.wantProgress)
				}
			})
		}
	}
}

func TestTools(t *testing.T) {
	srv := startHTTP(t, demo.HTTPOptions{}, nil)
	c, _ := connect(t, srv.URL)
	salaries := demo.DefaultDocuments()["/hr/salaries.csv"]

	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		want    string // whole text, or a prefix when wantErr
		wantErr bool
	}{
		{name: "echo", tool: "echo", args: map[string]any{"message": "hi there"}, want: "Echo: hi there"},
		{name: "add integers", tool: "add", args: map[string]any{"a": 2, "b": 3}, want: "5"},
		{name: "add fractions", tool: "add", args: map[string]any{"a": 0.5, "b": -2}, want: "-1.5"},
		{name: "read sensitive document", tool: "read_document", args: map[string]any{"path": "/hr/salaries.csv"}, want: salaries},
		{name: "read missing document", tool: "read_document", args: map[string]any{"path": "/nope.txt"}, want: "document not found: /nope.txt", wantErr: true},
		{name: "send email", tool: "send_email", args: map[string]any{"to": "bob@example.com", "subject": "hi", "body": "lunch?"},
			want: "queued message to bob@example.com"},
		{name: "count to zero", tool: "slow_count", args: map[string]any{"n": 0}, want: "counted to 0"},
		// Input schema validation turns bad arguments into tool errors.
		{name: "missing argument", tool: "echo", args: map[string]any{}, wantErr: true},
		{name: "wrong type", tool: "add", args: map[string]any{"a": "two", "b": 3}, wantErr: true},
		{name: "unknown argument", tool: "echo", args: map[string]any{"message": "x", "extra": 1}, wantErr: true},
		{name: "count too high", tool: "slow_count", args: map[string]any{"n": 1_000_000}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			res, err := callTool(ctx, c, tt.tool, tt.args, nil)
			if err != nil {
				t.Fatalf("CallTool(%s, %v): %v", tt.tool, tt.args, err)
			}
			got := resultText(t, res)
			if res.IsError != tt.wantErr {
				t.Errorf("isError = %v, want %v (text %q)", res.IsError, tt.wantErr, got)
			}
			if !strings.HasPrefix(got, tt.want) || !tt.wantErr && got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}

	res, err := callTool(t.Context(), c, demo.ToolWebSearch, map[string]any{"query": "mcp gateway"}, nil)
	if err != nil {
		t.Fatalf("web_search: %v", err)
	}
	if got := resultText(t, res); !strings.HasPrefix(got, `Top results for "mcp gateway":`) {
		t.Errorf("web_search = %q, want canned results for the query", got)
	}
}

func TestAnnotations(t *testing.T) {
	srv := startHTTP(t, demo.HTTPOptions{}, nil)
	c, _ := connect(t, srv.URL)
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]hints{
		"echo":               {readOnly: true, idempotent: true},
		"add":                {readOnly: true, idempotent: true},
		"read_document":      {readOnly: true, idempotent: true},
		"web_search":         {readOnly: true, openWorld: true},
		"send_email":         {openWorld: true},
		"slow_count":         {readOnly: true, idempotent: true},
		"rotate_description": {destructive: true},
	}
	for _, tool := range list.Tools {
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations %+v, want every hint set", tool.Name, a)
			continue
		}
		got := hints{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}
		if got != want[tool.Name] {
			t.Errorf("%s: hints %+v, want %+v", tool.Name, got, want[tool.Name])
		}
		if tool.Description == "" || a.Title == "" {
			t.Errorf("%s: description %q, title %q; want both", tool.Name, tool.Description, a.Title)
		}
	}
}

// TestRotateDescription checks that rotate_description changes what
// tools/list says about web_search, and announces it in both eras.
func TestRotateDescription(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			srv := startHTTP(t, demo.HTTPOptions{}, nil)
			c, _ := connect(t, srv.URL, client.WithProtocolVersion(version))
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()

			changed := make(chan struct{}, 10)
			acknowledged := make(chan struct{}, 1)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				switch n.Method {
				case string(mcp.MethodNotificationToolsListChanged):
					changed <- struct{}{}
				case mcp.MethodNotificationSubscriptionsAcknowledged:
					acknowledged <- struct{}{}
				}
			})
			if version == mcp.ProtocolVersion20260728 {
				// 2026-07-28 delivers list_changed only to clients that
				// opted in on a subscriptions/listen stream. The server
				// acknowledges the stream once broadcasts can reach it.
				stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
				if err != nil {
					t.Fatalf("ListenAsync: %v", err)
				}
				defer stop()
				select {
				case <-acknowledged:
				case <-ctx.Done():
					t.Fatal("no notifications/subscriptions/acknowledged")
				}
			}

			before := webSearchDescription(t, ctx, c)
			res, err := callTool(ctx, c, demo.ToolRotateDescription, nil, nil)
			if err != nil {
				t.Fatalf("rotate_description: %v", err)
			}
			if got, want := resultText(t, res), "web_search description is now revision 1"; got != want {
				t.Errorf("rotate_description = %q, want %q", got, want)
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("no notifications/tools/list_changed")
			}
			after := webSearchDescription(t, ctx, c)
			if after == before || !strings.Contains(after, "(revision 1)") {
				t.Errorf("web_search description went from %q to %q, want a changed one at revision 1", before, after)
			}
		})
	}
}

func webSearchDescription(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	for _, tool := range list.Tools {
		if tool.Name == demo.ToolWebSearch {
			return tool.Description
		}
	}
	t.Fatal("web_search not listed")
	return ""
}

// TestSlowCountCancel cancels a long slow_count after its first progress
// notification. The call must fail with the context's error, and the server
// must stop counting: httptest.Server.Close waits for every request handler,
// so it returns promptly only if the handler saw the cancellation.
func TestSlowCountCancel(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			h := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
			srv := httptest.NewServer(h)
			c, _ := connect(t, srv.URL, client.WithProtocolVersion(version))

			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			callCtx, cancelCall := context.WithCancel(ctx)
			rec := &progressRecorder{onFirst: cancelCall}
			c.OnNotification(rec.handle)

			_, err := callTool(callCtx, c, demo.ToolSlowCount,
				map[string]any{"n": 1000, "delay_ms": 10}, &mcp.Meta{ProgressToken: "cancel-me"})
			// mcp-go's client answers a cancelled call with ctx.Err() or,
			// when its stream reader ends first (a select between the two),
			// "unexpected nil response": either is the call failing because
			// it was cancelled.
			if err == nil || !errors.Is(callCtx.Err(), context.Canceled) {
				t.Fatalf("slow_count error = %v (call context: %v), want the call cancelled", err, callCtx.Err())
			}
			_ = c.Close()

			closed := make(chan struct{})
			go func() { srv.Close(); close(closed) }()
			select {
			case <-closed:
			case <-ctx.Done():
				t.Fatal("server still busy after cancellation: slow_count kept counting")
			}
			if got := len(rec.values()); got >= 1000 {
				t.Errorf("%d progress notifications, want the count cut short", got)
			}
		})
	}
}

func TestDefaultDocumentsIsACopy(t *testing.T) {
	docs := demo.DefaultDocuments()
	docs["/docs/handbook.md"] = "changed"
	if demo.DefaultDocuments()["/docs/handbook.md"] == "changed" {
		t.Error("DefaultDocuments returned the shared map, want a copy")
	}
}

func TestCustomDocuments(t *testing.T) {
	docs := map[string]string{"/a.txt": "alpha"}
	srv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{Documents: docs}), demo.HTTPOptions{}))
	t.Cleanup(srv.Close)
	c, _ := connect(t, srv.URL)
	docs["/a.txt"] = "changed after NewServer"

	res, err := callTool(t.Context(), c, demo.ToolReadDocument, map[string]any{"path": "/a.txt"}, nil)
	if err != nil {
		t.Fatalf("read_document: %v", err)
	}
	if got := resultText(t, res); got != "alpha" {
		t.Errorf("read_document = %q, want %q", got, "alpha")
	}
	res, err = callTool(t.Context(), c, demo.ToolReadDocument, map[string]any{"path": "/docs/handbook.md"}, nil)
	if err != nil {
		t.Fatalf("read_document: %v", err)
	}
	if !res.IsError {
		t.Errorf("read_document of a default path with custom documents: isError false, want true")
	}
}

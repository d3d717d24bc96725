package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// recordingDialer wraps an upstream's dialer: it keeps every message the
// gateway sends upstream and, when one contains failOn, breaks the
// connection, as an upstream that dies while a call is pending would.
type recordingDialer struct {
	next   transport.Dialer
	failOn string

	mu   sync.Mutex // guards sent
	sent [][]byte
}

func (d *recordingDialer) Dial(ctx context.Context) (transport.Conn, error) {
	c, err := d.next.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, d: d}, nil
}

type recordingConn struct {
	transport.Conn
	d *recordingDialer
}

func (c *recordingConn) Write(ctx context.Context, msg []byte) error {
	c.d.mu.Lock()
	c.d.sent = append(c.d.sent, bytes.Clone(msg))
	c.d.mu.Unlock()
	if c.d.failOn != "" && bytes.Contains(msg, []byte(c.d.failOn)) {
		_ = c.Conn.Close()
		return nil
	}
	return c.Conn.Write(ctx, msg)
}

// sentWith returns the one message sent upstream that contains s.
func (d *recordingDialer) sentWith(t *testing.T, s string) []byte {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var found [][]byte
	for _, m := range d.sent {
		if bytes.Contains(m, []byte(s)) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("messages sent upstream containing %s: got %d, want 1", s, len(found))
	}
	return found[0]
}

// startGateway serves opts, whose stdio upstream "stdio" is reached
// through a recordingDialer breaking on failOn. Every goroutine the test
// starts must be gone at its end.
func startGateway(t *testing.T, opts Options, failOn string) (url string, g *Gateway, rec *recordingDialer) {
	t.Helper()
	g, err := New(opts, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// Replaced before the listener starts, so no request sees the old one.
	rec = &recordingDialer{next: g.routes["stdio"].dialer, failOn: failOn}
	g.routes["stdio"].dialer = rec
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	return gw.URL, g, rec
}

// checkNoLeaks fails t if goroutines started after it outlive t's cleanups.
func checkNoLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// spanRecorder keeps ended spans and tells a waiting test when one ends.
type spanRecorder struct {
	*tracetest.InMemoryExporter
	ended chan struct{}
}

func newSpanRecorder(t *testing.T) (*spanRecorder, telemetry.Tracer) {
	r := &spanRecorder{InMemoryExporter: tracetest.NewInMemoryExporter(), ended: make(chan struct{}, 1)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return r, telemetry.NewTracer(tp)
}

func (r *spanRecorder) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := r.InMemoryExporter.ExportSpans(ctx, spans)
	select {
	case r.ended <- struct{}{}:
	default:
	}
	return err
}

// wait returns the one ended span of kind in trace, waiting for it: some
// spans end just after their response is passed on.
func (r *spanRecorder) wait(t *testing.T, trace, kind string) tracetest.SpanStub {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		var found []tracetest.SpanStub
		for _, s := range r.GetSpans() {
			if s.SpanContext.TraceID().String() == trace && s.SpanKind.String() == kind {
				found = append(found, s)
			}
		}
		switch len(found) {
		case 0:
		case 1:
			return found[0]
		default:
			t.Fatalf("%d %s spans in trace %s, want 1: %v", len(found), kind, trace, spanNames(found))
		}
		select {
		case <-r.ended:
		case <-timeout:
			t.Fatalf("no %s span in trace %s after 10s; got %v", kind, trace, spanNames(r.GetSpans()))
		}
	}
}

func attrsOf(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// A stdioClient talks to the "stdio" route over one downstream transport.
type stdioClient interface {
	// call sends a tools/call echo request with the given id, message
	// and params._meta members (raw JSON, may be empty), and returns the
	// body the client sent and the response it got.
	call(t *testing.T, id int, message, meta string) (sent string, resp *intercept.Message)
	// session is the gateway's session id, "" for none.
	session() string
	// version is the protocol version of the calls.
	version() string
}

// modernMeta are the _meta members a 2026-07-28 request must carry.
const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`

func echoCall(id int, message, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q},"_meta":{%s}}}`, id, message, meta)
}

// httpClient posts to /mcp/stdio, in a 2025-11-25 session (the bridge) or
// statelessly in 2026-07-28.
type httpClient struct {
	url string
	sid string // "" for stateless
}

func (c *httpClient) call(t *testing.T, id int, message, meta string) (string, *intercept.Message) {
	t.Helper()
	hdr := modernHeaders("tools/call", "echo")
	if c.sid != "" {
		hdr = map[string]string{"Mcp-Session-Id": c.sid, "Mcp-Protocol-Version": "2025-11-25"}
	} else {
		meta += `,` + modernMeta
	}
	body := echoCall(id, message, strings.TrimPrefix(meta, ","))
	_, h, resp := post(t, c.url, hdr, body)
	return body, answerTo(t, h, resp, itoa(id))
}

// answerTo finds the JSON-RPC response or error response with id in a
// JSON or SSE body.
func answerTo(t *testing.T, hdr http.Header, body string, id string) *intercept.Message {
	t.Helper()
	msgs := [][]byte{[]byte(body)}
	if isEventStream(hdr) {
		msgs = nil
		rd := transport.NewSSEReader(strings.NewReader(body))
		for ev, err := rd.Next(); err == nil; ev, err = rd.Next() {
			msgs = append(msgs, ev.Data)
		}
	}
	for _, b := range msgs {
		m, err := intercept.DecodeMessage(b)
		if err == nil && (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) && m.IDKey() == id {
			return m
		}
	}
	t.Fatalf("no answer with id %s in %q", id, body)
	return nil
}

func (c *httpClient) session() string { return c.sid }

func (c *httpClient) version() string {
	if c.sid == "" {
		return "2026-07-28"
	}
	return "2025-11-25"
}

// connClient speaks to /ws/stdio or /sse/stdio, which the relay serves.
type connClient struct {
	c transport.Conn
}

func dialConn(t *testing.T, d transport.Dialer) *connClient {
	t.Helper()
	c, err := d.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc := &connClient{c: c}
	cc.rpc(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conn","version":"1"}}}`, "0")
	if err := c.Write(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	return cc
}

// rpc sends msg and returns the response with id, skipping anything else.
func (c *connClient) rpc(t *testing.T, msg, id string) *intercept.Message {
	t.Helper()
	if err := c.c.Write(t.Context(), []byte(msg)); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := c.c.Read(t.Context())
		if err != nil {
			t.Fatalf("waiting for the response to %s: %v", id, err)
		}
		m, err := intercept.DecodeMessage(b)
		if err == nil && (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) && m.IDKey() == id {
			return m
		}
	}
}

func (c *connClient) call(t *testing.T, id int, message, meta string) (string, *intercept.Message) {
	t.Helper()
	body := echoCall(id, message, meta)
	return body, c.rpc(t, body, itoa(id))
}

func (c *connClient) session() string { return "" }
func (c *connClient) version() string { return "2025-11-25" }

// TestUpstreamSpansOverMessageUpstreams checks the upstream client span of
// a tools/call to a stdio upstream on each path that reaches one: the
// Streamable HTTP bridge, 2026-07-28 stateless requests on the shared
// connection, and the relay behind /ws and /sse. The span is a child of
// the call's server span, described by the MCP conventions; the upstream
// gets the client span's context in params._meta and nothing else
// changed; an upstream that dies ends it with an error.
func TestUpstreamSpansOverMessageUpstreams(t *testing.T) {
	bin := buildDemoServer(t)
	for _, path := range []string{"bridge", "stateless", "websocket", "sse"} {
		t.Run(path, func(t *testing.T) {
			checkNoLeaks(t)
			spans, tracer := newSpanRecorder(t)
			url, _, rec := startGateway(t, Options{Tracer: tracer,
				Upstreams: []Upstream{{Name: "stdio", Command: bin, Args: []string{"-transport", "stdio"}}}}, "boom")
			var c stdioClient
			switch path {
			case "bridge":
				c = &httpClient{url: url + "/mcp/stdio", sid: initialize(t, url+"/mcp/stdio")}
			case "stateless":
				c = &httpClient{url: url + "/mcp/stdio"}
			case "websocket":
				c = dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(url, "http") + "/ws/stdio"})
			case "sse":
				c = dialConn(t, &transport.SSEDialer{URL: url + "/sse/stdio"})
			}

			const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
			// A progress token too: the stateless path rewrites it in the
			// same _meta the trace context goes into.
			sent, resp := c.call(t, 7, "traced", `"traceparent":"00-`+trace+`-00f067aa0ba902b7-01","progressToken":"tok-7"`)
			if resp.Kind != intercept.KindResponse || !strings.Contains(string(resp.Result), "Echo: traced") {
				t.Fatalf("call: got %s, want the echo result", resp.Raw)
			}
			server := spans.wait(t, trace, "server")
			upstream := spans.wait(t, trace, "client")
			if upstream.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Errorf("client span's parent: got %s, want the server span %s", upstream.Parent.SpanID(), server.SpanContext.SpanID())
			}
			if upstream.Name != "tools/call echo" || upstream.Status.Code != codes.Unset {
				t.Errorf("client span: got %q with status %v, want \"tools/call echo\" unset", upstream.Name, upstream.Status)
			}
			want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "7", "mcp.protocol.version": c.version(), "sluice.upstream": "stdio", "network.transport": "pipe"}
			got := attrsOf(upstream)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("client span %s: got %q, want %q", k, got[k], v)
				}
			}
			if _, ok := got["network.protocol.name"]; ok {
				t.Errorf("client span network.protocol.name: got %q, want none for a pipe", got["network.protocol.name"])
			}
			if sid := attrsOf(server)["mcp.session.id"]; got["mcp.session.id"] != sid || (sid == "") != (path == "stateless") || (c.session() != "" && sid != telemetry.SessionRef(c.session())) {
				t.Errorf("client span mcp.session.id: got %q, server span's %q, client's session %q", got["mcp.session.id"], sid, c.session())
			}
			checkForwarded(t, rec.sentWith(t, `"traced"`), sent, upstream, path == "stateless")

			// The upstream dies with the call pending.
			const failing = "0af7651916cd43dd8448eb211c80319c"
			_, resp = c.call(t, 8, "boom", `"traceparent":"00-`+failing+`-b7ad6b7169203331-01"`)
			if resp.Kind != intercept.KindError {
				t.Errorf("call to a dying upstream: got %s, want an error response", resp.Raw)
			}
			failed := spans.wait(t, failing, "client")
			if failed.Status.Code != codes.Error || attrsOf(failed)["jsonrpc.request.id"] != "8" {
				t.Errorf("client span of the failed call: got status %v, attributes %v; want an error", failed.Status, attrsOf(failed))
			}
		})
	}
}

// checkForwarded checks that fwd, the message the upstream got, is sent
// with only the trace context of span in params._meta changed, and when
// rewritten, the gateway's own id and progress token.
func checkForwarded(t *testing.T, fwd []byte, sent string, span tracetest.SpanStub, rewritten bool) {
	t.Helper()
	var got, want map[string]any
	if err := json.Unmarshal(fwd, &got); err != nil {
		t.Fatalf("message sent upstream %s: %v", fwd, err)
	}
	if err := json.Unmarshal([]byte(sent), &want); err != nil {
		t.Fatal(err)
	}
	meta, _ := got["params"].(map[string]any)["_meta"].(map[string]any)
	tp, _ := meta["traceparent"].(string)
	if prefix := "00-" + span.SpanContext.TraceID().String() + "-" + span.SpanContext.SpanID().String() + "-"; !strings.HasPrefix(tp, prefix) {
		t.Errorf("params._meta.traceparent sent upstream: got %q, want the client span's %s..", tp, prefix)
	}
	meta["traceparent"] = want["params"].(map[string]any)["_meta"].(map[string]any)["traceparent"]
	if rewritten {
		if id, _ := got["id"].(string); !strings.HasPrefix(id, "sluice-") {
			t.Errorf("id sent upstream: got %v, want the gateway's own", got["id"])
		}
		if tok, _ := meta["progressToken"].(string); !strings.HasPrefix(tok, "sluice-p-") {
			t.Errorf("progress token sent upstream: got %v, want the gateway's own", meta["progressToken"])
		}
		got["id"], meta["progressToken"] = want["id"], "tok-7"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message sent upstream, besides the trace context (-sent by the client +got upstream):\n%s", diff)
	}
}

// countingTracer checks that every span it starts ends exactly once.
type countingTracer struct {
	next  telemetry.Tracer
	ended chan struct{} // a span ended

	mu    sync.Mutex // guards spans and the fields of every countedSpan
	spans []*countedSpan
}

type countedSpan struct {
	telemetry.Span
	t      *countingTracer
	name   string
	id     string // jsonrpc.request.id
	client bool
	ends   int
	err    error
}

func (c *countingTracer) Start(ctx context.Context, name string, attrs ...telemetry.Attr) (context.Context, telemetry.Span) {
	ctx, s := c.next.Start(ctx, name, attrs...)
	cs := &countedSpan{Span: s, t: c, name: name}
	for _, a := range attrs {
		switch {
		case a.Key == telemetry.KeySpanKind && a.Value == telemetry.SpanKindClient:
			cs.client = true
		case a.Key == telemetry.KeyJSONRPCRequestID:
			cs.id, _ = a.Value.(string)
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, cs)
	c.mu.Unlock()
	return ctx, cs
}

func (s *countedSpan) End(err error) {
	s.t.mu.Lock()
	s.ends++
	first := s.ends == 1
	if first {
		s.err = err
	}
	s.t.mu.Unlock()
	if first {
		s.Span.End(err)
	}
	select {
	case s.t.ended <- struct{}{}:
	default:
	}
}

// waitEnd waits until the client span of the call with id has ended and
// returns the error.type it ended with.
func (c *countingTracer) waitEnd(t *testing.T, id string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, s := range c.spans {
			if s.client && s.id == id && s.ends > 0 {
				c.mu.Unlock()
				return telemetry.ErrorType(s.err)
			}
		}
		c.mu.Unlock()
		select {
		case <-c.ended:
		case <-timeout:
			t.Fatalf("the client span of call %s has not ended after 10s", id)
		}
	}
}

// TestUpstreamSpansEnd leaves calls pending on every path to a stdio
// upstream, then ends them the ways a gateway does (a client leaving, a
// session deleted, shutdown): every span started ends exactly once, the
// client spans of those calls with an error.
func TestUpstreamSpansEnd(t *testing.T) {
	bin := buildDemoServer(t)
	checkNoLeaks(t)
	_, otel := newSpanRecorder(t)
	tracer := &countingTracer{next: otel, ended: make(chan struct{}, 1)}
	url, g, _ := startGateway(t, Options{Tracer: tracer, Upstreams: []Upstream{{Name: "stdio", Command: bin, Args: []string{"-transport", "stdio"}}}}, "")
	mcp := url + "/mcp/stdio"
	slow := func(id int, meta string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":1000,"delay_ms":20},"_meta":{"progressToken":"p%d"%s}}}`, id, id, meta)
	}
	// started starts a streamed call and waits until it is under way;
	// leave breaks it off.
	started := func(hdr map[string]string, body string) (leave func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		resp := openPost(t, ctx, mcp, hdr, body)
		if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line == "" {
			t.Fatalf("reading the first event: %q %v", line, err)
		}
		leave = func() { cancel(); resp.Body.Close() }
		t.Cleanup(leave)
		return leave
	}
	stateless := modernHeaders("tools/call", "slow_count")
	inSession := func(sid string) map[string]string {
		return map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	}
	want := map[string]string{} // request id -> error.type its client span ends with

	// Stateless: the client leaves; pending at shutdown.
	started(stateless, slow(1, ","+modernMeta))()
	want["1"] = tracer.waitEnd(t, "1")
	if want["1"] != "cancelled" {
		t.Errorf("client span of a stateless call whose client left: error.type %q, want cancelled", want["1"])
	}
	started(stateless, slow(2, ","+modernMeta))
	want["2"] = telemetry.ErrorTypeOther

	// Bridged session: the client leaves; the session is deleted; pending
	// at shutdown.
	sid := initialize(t, mcp)
	started(inSession(sid), slow(3, ""))()
	want["3"] = tracer.waitEnd(t, "3")
	if want["3"] != "cancelled" {
		t.Errorf("client span of a bridged call whose client left: error.type %q, want cancelled", want["3"])
	}
	started(inSession(sid), slow(4, ""))
	req, _ := http.NewRequest(http.MethodDelete, mcp, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if got := tracer.waitEnd(t, "4"); got != telemetry.ErrorTypeOther {
		t.Errorf("client span of a call in a deleted session: error.type %q, want %q", got, telemetry.ErrorTypeOther)
	}
	want["4"] = telemetry.ErrorTypeOther
	started(inSession(initialize(t, mcp)), slow(5, ""))
	want["5"] = telemetry.ErrorTypeOther

	// Relayed: the client leaves; pending at shutdown.
	for i, leave := range []bool{true, false} {
		id := 6 + i
		c := dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(url, "http") + "/ws/stdio"})
		if err := c.c.Write(t.Context(), []byte(slow(id, ""))); err != nil {
			t.Fatal(err)
		}
		if _, err := c.c.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
		want[itoa(id)] = telemetry.ErrorTypeOther
		if leave {
			c.c.Close()
			tracer.waitEnd(t, itoa(id))
		}
	}

	g.Close()
	// Once shut down, nothing is pending: every upstream call has ended,
	// each once. (Server spans over HTTP end as their handlers return.)
	tracer.mu.Lock()
	defer tracer.mu.Unlock()
	got := map[string]string{}
	for _, s := range tracer.spans {
		if s.ends > 1 || (s.client && s.ends != 1) {
			t.Errorf("span %s (request %s, client %v) ended %d times, want once", s.name, s.id, s.client, s.ends)
		}
		if s.client && s.name == "tools/call slow_count" {
			got[s.id] = telemetry.ErrorType(s.err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error.type of the client spans of calls left pending (-want +got):\n%s", diff)
	}
}

// upstreamObs is one Upstream measurement: the upstream and the
// error.type of its error, "" for none.
type upstreamObs struct{ name, err string }

// upstreamCounter is a telemetry.Metrics that keeps Upstream measurements.
type upstreamCounter struct {
	telemetry.NopTelemetry
	mu   sync.Mutex
	obs  []upstreamObs
	more chan struct{}
}

func (c *upstreamCounter) Upstream(name string, d time.Duration, err error) {
	c.mu.Lock()
	c.obs = append(c.obs, upstreamObs{name, telemetry.ErrorType(err)})
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// wait returns the first n measurements once there are that many.
func (c *upstreamCounter) wait(t *testing.T, n int) []upstreamObs {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := append([]upstreamObs(nil), c.obs...)
		c.mu.Unlock()
		if len(got) >= n {
			return got[:n]
		}
		select {
		case <-c.more:
		case <-timeout:
			t.Fatalf("upstream measurements after 10s: got %v, want %d", got, n)
		}
	}
}

// TestUpstreamMetrics counts the Upstream measurements of calls to an
// HTTP upstream and to a stdio one on each path, with their errors: a
// JSON-RPC error, an HTTP 500, an unreachable upstream, a stdio upstream
// that dies, a client that leaves. Denied calls reach no upstream.
func TestUpstreamMetrics(t *testing.T) {
	bin := buildDemoServer(t)
	checkNoLeaks(t)
	demoHTTP := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		switch {
		case bytes.Contains(b.Bytes(), []byte(`"rpc-error"`)):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad arguments"}}`))
		case bytes.Contains(b.Bytes(), []byte(`"http-500"`)):
			http.Error(w, "broken", http.StatusInternalServerError)
		default:
			r.Body = io.NopCloser(&b)
			demoHTTP.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(web.Close)
	m := &upstreamCounter{more: make(chan struct{}, 1)}
	url, g, _ := startGateway(t, Options{Metrics: m, Upstreams: []Upstream{
		{Name: "web", URL: web.URL + "/mcp"},
		{Name: "gone", URL: "http://127.0.0.1:1/mcp"},
		{Name: "stdio", Command: bin, Args: []string{"-transport", "stdio"}},
	}}, "boom")
	stateless := func(route string, id int, message string) string {
		_, _, body := post(t, url+"/mcp/"+route, modernHeaders("tools/call", "echo"), modernCall(id, "echo", `{"message":"`+message+`"}`))
		return body
	}
	var want []upstreamObs
	step := func(name string, do func(), obs ...upstreamObs) {
		t.Helper()
		do()
		want = append(want, obs...)
		if diff := cmp.Diff(want, m.wait(t, len(want)), cmp.AllowUnexported(upstreamObs{})); diff != "" {
			t.Fatalf("after %s, upstream measurements (-want +got):\n%s", name, diff)
		}
	}
	ok := func(name string) upstreamObs { return upstreamObs{name, ""} }

	step("an HTTP call", func() { stateless("web", 1, "hi") }, ok("web"))
	step("a JSON-RPC error over HTTP", func() { stateless("web", 2, "rpc-error") }, upstreamObs{"web", "-32602"})
	step("HTTP 500", func() { stateless("web", 3, "http-500") }, upstreamObs{"web", "500"})
	step("an unreachable HTTP upstream", func() { stateless("gone", 4, "hi") }, upstreamObs{"gone", telemetry.ErrorTypeOther})
	step("a denied call", func() {
		post(t, url+"/mcp/web", modernHeaders("tools/call", "send_email"), modernCall(5, "send_email", `{"to":"a","subject":"b","body":"c"}`))
	})
	step("a stateless stdio call", func() { stateless("stdio", 6, "hi") }, ok("stdio"))
	step("a stdio upstream dying", func() {
		if body := stateless("stdio", 7, "boom"); !strings.Contains(body, `"error"`) {
			t.Errorf("call to a dying upstream: got %s, want an error", body)
		}
	}, upstreamObs{"stdio", telemetry.ErrorTypeOther})
	step("a stateless client leaving", func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body := modernCall(8, "slow_count", `{"n":1000,"delay_ms":20}`)
		body = strings.Replace(body, `"_meta":{`, `"_meta":{"progressToken":"p8",`, 1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp/stdio", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "slow_count") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}, upstreamObs{"stdio", "cancelled"})
	step("a bridged session", func() {
		sid := initialize(t, url+"/mcp/stdio")
		(&httpClient{url: url + "/mcp/stdio", sid: sid}).call(t, 9, "hi", "")
	}, ok("stdio"), ok("stdio"))
	step("a WebSocket session", func() {
		c := dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(url, "http") + "/ws/stdio"})
		c.call(t, 10, "hi", "")
		if resp := c.rpc(t, `{"jsonrpc":"2.0","id":11,"method":"sluice/no-such-method","params":{}}`, "11"); resp.Kind != intercept.KindError {
			t.Errorf("unknown method: got %s, want a JSON-RPC error", resp.Raw)
		}
	}, ok("stdio"), ok("stdio"), upstreamObs{"stdio", "-32601"})

	g.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if diff := cmp.Diff(want, m.obs, cmp.AllowUnexported(upstreamObs{})); diff != "" {
		t.Errorf("upstream measurements at shutdown (-want +got):\n%s", diff)
	}
}

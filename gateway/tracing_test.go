package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// TestTracing checks the spans of a governed call: a server span named by
// the MCP conventions, parented to the client's traceparent from _meta,
// with policy and upstream children, and the trace passed on upstream.
func TestTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	var mu sync.Mutex
	var upstreamTraceparent, upstreamBody string
	f := newFixture(t, allowEcho, Options{Tracer: telemetry.NewTracer(tp)})
	f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamTraceparent = r.Header.Get("traceparent")
		b, _ := io.ReadAll(r.Body)
		upstreamBody = string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	})
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	body := strings.Replace(modernCall(1, "echo", `{"message":"t"}`), `"_meta":{`, `"_meta":{"traceparent":"00-`+clientTrace+`-00f067aa0ba902b7-01",`, 1)
	if status, _, got := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "echo"), body); status != 200 {
		t.Fatalf("call: %d %s", status, got)
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	server, ok := byName["tools/call echo"]
	if !ok {
		t.Fatalf("no span named \"tools/call echo\"; got %v", spanNames(spans))
	}
	if got := server.SpanContext.TraceID().String(); got != clientTrace {
		t.Errorf("server span trace id: got %s, want the client's %s", got, clientTrace)
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "jsonrpc.request.id": "1", "mcp.protocol.version": "2026-07-28"} {
		if attrs[k] != want {
			t.Errorf("server span %s: got %q, want %q", k, attrs[k], want)
		}
	}
	policy := byName[telemetry.StagePolicy]
	if policy.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("policy span is not a child of the server span")
	}
	var client tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "tools/call echo" && s.SpanKind.String() == "client" {
			client = s
		}
	}
	if client.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("upstream client span is not a child of the server span: %v", spanNames(spans))
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(upstreamTraceparent, clientTrace) || !strings.Contains(upstreamTraceparent, client.SpanContext.SpanID().String()) {
		t.Errorf("traceparent sent upstream: got %q, want trace %s and the client span's id", upstreamTraceparent, clientTrace)
	}
	if want := `"traceparent":"` + upstreamTraceparent + `"`; !strings.Contains(upstreamBody, want) || !strings.Contains(upstreamBody, `"message":"t"`) {
		t.Errorf("body sent upstream: got %s, want params._meta %s and the arguments unchanged", upstreamBody, want)
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"/"+s.SpanKind.String())
	}
	return out
}

// TestTracingOverWebSocket: requests over a message transport get their
// server span too, parented to the client's _meta trace context, ended
// when the response comes back.
func TestTracingOverWebSocket(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	f := newFixture(t, allowEcho, Options{Tracer: telemetry.NewTracer(tp)})
	c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/demo"}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const clientTrace = "0af7651916cd43dd8448eb211c80319c"
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ws","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"w"},"_meta":{"traceparent":"00-` + clientTrace + `-b7ad6b7169203331-01"}}}`,
	} {
		if err := c.Write(t.Context(), []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(msg, `"id"`) {
			if _, err := c.Read(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The span ends just after the response is passed on: wait for it.
	var server tracetest.SpanStub
	for deadline := time.Now().Add(5 * time.Second); server.Name == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, s := range exp.GetSpans() {
			if s.Name == "tools/call echo" && s.SpanKind.String() == "server" {
				server = s
			}
		}
	}
	if got := server.SpanContext.TraceID().String(); got != clientTrace {
		t.Fatalf("server span over WebSocket: trace %s, want the client's %s; spans %v", got, clientTrace, spanNames(exp.GetSpans()))
	}
	for _, kv := range server.Attributes {
		if string(kv.Key) == "network.protocol.name" && kv.Value.Emit() != "websocket" {
			t.Errorf("network.protocol.name: got %s, want websocket", kv.Value.Emit())
		}
	}
}

// TestTraceMetaDropsStaleTracestate checks that a client's tracestate
// does not travel upstream beside the gateway's traceparent, which it does
// not belong to, and that the rest of _meta is kept as it was.
func TestTraceMetaDropsStaleTracestate(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(t.Context())
	ctx, span := telemetry.StartUpstream(t.Context(), telemetry.NewTracer(tp), telemetry.Call{Method: "tools/call"})
	defer span.End(nil)
	meta := jsontext.Value(`{"tracestate":"vendor=client-state","progressToken":7}`)
	params := jsontext.Value(`{"name":"echo","_meta":` + string(meta) + `}`)
	raw := jsontext.Value(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(params) + `}`)
	out, ok := withTraceMeta(ctx, raw, params, meta)
	if !ok {
		t.Fatal("withTraceMeta: not rewritten")
	}
	got := intercept.Member(intercept.Member(jsontext.Value(out), "params"), "_meta")
	if intercept.Member(got, "tracestate") != nil || intercept.Member(got, "traceparent") == nil || string(intercept.Member(got, "progressToken")) != "7" {
		t.Errorf("_meta sent upstream: %s; want a traceparent, the progress token, and no client tracestate", got)
	}
}

// TestTraceContextPassesWithTracingOff: with no tracing configured (the
// no-op tracer), a client's trace context still reaches the upstream, in
// params._meta too, where a stdio upstream can only read it.
func TestTraceContextPassesWithTracingOff(t *testing.T) {
	var mu sync.Mutex
	var upstreamBody string
	f := newFixture(t, allowEcho, Options{Tracer: telemetry.Nop(), Metrics: telemetry.Nop()})
	f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, _ := io.ReadAll(r.Body)
		upstreamBody = string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	})
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := modernHeaders("tools/call", "echo")
	h["traceparent"] = traceparent
	if status, _, got := post(t, f.gw.URL+"/mcp/demo", h, modernCall(1, "echo", `{"message":"t"}`)); status != 200 {
		t.Fatalf("call: %d %s", status, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := `"traceparent":"` + traceparent + `"`; !strings.Contains(upstreamBody, want) {
		t.Errorf("body sent upstream: got %s, want params._meta %s", upstreamBody, want)
	}
}

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

func newRecorded(t *testing.T) (Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return NewTracer(tp), exp
}

// TestGovernedCallSpans traces one tools/call as the gateway would: the
// client's traceparent from _meta, a server span, classification and
// policy children, an upstream client span whose context goes on in the
// forwarded _meta.
func TestGovernedCallSpans(t *testing.T) {
	tr, exp := newRecorded(t)
	call := Call{
		Method: "tools/call", Tool: "get-weather", SessionID: "191c4850af6c", RequestID: "7",
		ProtocolVersion: "2025-06-18", Transport: TransportTCP, NetworkProtocol: "http",
		TxnID: "txn-1", Agent: "claude-code", Upstream: "weather",
	}

	ctx := ExtractMeta(context.Background(), map[string]string{MetaTraceparent: clientParent, MetaTracestate: "rojo=00f067aa0ba902b7"})
	ctx, server := StartCall(ctx, tr, call)
	_, cls := StartStage(ctx, tr, StageClassification)
	cls.SetAttr(String(KeyCapability, "weather.read"), Float(KeyConfidence, 0.9))
	cls.End(nil)
	_, pol := StartStage(ctx, tr, StagePolicy)
	pol.SetAttr(String(KeyDecision, "allow"), String(KeyReason, "tool_allowed"))
	pol.End(nil)
	uctx, up := StartUpstream(ctx, tr, call)
	forwarded := InjectMeta(uctx, map[string]string{"progressToken": "p1"})
	up.End(&CallError{Type: ErrorTypeTool, Message: "upstream said: Bearer abcdefghijklmnop"})
	server.SetAttr(String(KeyDecision, "allow"))
	server.End(nil)

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		key := s.Name
		if s.SpanKind == trace.SpanKindClient {
			key = "client " + s.Name
		}
		byName[key] = s
	}
	srv, ok := byName["tools/call get-weather"]
	if !ok {
		t.Fatalf("no server span named %q among %v", "tools/call get-weather", names(spans))
	}
	cli := byName["client tools/call get-weather"]
	clsSpan, polSpan := byName[StageClassification], byName[StagePolicy]

	// Kinds.
	for _, c := range []struct {
		name string
		got  trace.SpanKind
		want trace.SpanKind
	}{
		{"server", srv.SpanKind, trace.SpanKindServer},
		{"upstream", cli.SpanKind, trace.SpanKindClient},
		{"classification", clsSpan.SpanKind, trace.SpanKindInternal},
		{"policy", polSpan.SpanKind, trace.SpanKindInternal},
	} {
		if c.got != c.want {
			t.Errorf("%s span kind: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// Parent/child links: the client's span is the server span's remote
	// parent; the steps and the upstream call are its children; all in
	// the client's trace.
	if got := srv.Parent.SpanID().String(); got != clientSpanID || !srv.Parent.IsRemote() {
		t.Errorf("server span parent: got %s (remote %v), want %s (remote)", got, srv.Parent.IsRemote(), clientSpanID)
	}
	for name, s := range map[string]tracetest.SpanStub{"server": srv, "upstream": cli, "classification": clsSpan, "policy": polSpan} {
		if got := s.SpanContext.TraceID().String(); got != clientTraceID {
			t.Errorf("%s span trace id: got %s, want %s", name, got, clientTraceID)
		}
	}
	for name, s := range map[string]tracetest.SpanStub{"upstream": cli, "classification": clsSpan, "policy": polSpan} {
		if s.Parent.SpanID() != srv.SpanContext.SpanID() {
			t.Errorf("%s span parent: got %s, want the server span %s", name, s.Parent.SpanID(), srv.SpanContext.SpanID())
		}
	}
	if got := srv.SpanContext.TraceState().String(); got != "rojo=00f067aa0ba902b7" {
		t.Errorf("tracestate: got %q, want the client's", got)
	}

	// The forwarded _meta names the upstream span as parent.
	want := fmt.Sprintf("00-%s-%s-01", clientTraceID, cli.SpanContext.SpanID())
	if got := forwarded[MetaTraceparent]; got != want {
		t.Errorf("forwarded traceparent: got %q, want %q", got, want)
	}
	if forwarded["progressToken"] != "p1" || forwarded[MetaTracestate] != "rojo=00f067aa0ba902b7" {
		t.Errorf("forwarded _meta: got %v, want progressToken and tracestate kept", forwarded)
	}

	// Convention attributes.
	wantAttrs := map[string]any{
		KeyMCPMethodName:         "tools/call",
		KeyGenAIToolName:         "get-weather",
		KeyGenAIOperationName:    OperationExecuteTool,
		KeyMCPSessionID:          "191c4850af6c",
		KeyJSONRPCRequestID:      "7",
		KeyMCPProtocolVersion:    "2025-06-18",
		KeyNetworkTransport:      "tcp",
		KeyNetworkProtocolName:   "http",
		KeyTxnID:                 "txn-1",
		KeyUpstream:              "weather",
		KeyDecision:              "allow",
		KeySpanKind + "(absent)": nil,
	}
	checkAttrs(t, "server", srv.Attributes, wantAttrs)
	checkAttrs(t, "policy", polSpan.Attributes, map[string]any{KeyDecision: "allow", KeyReason: "tool_allowed"})
	checkAttrs(t, "classification", clsSpan.Attributes, map[string]any{KeyCapability: "weather.read", KeyConfidence: 0.9})

	// The failed upstream call: error status, error.type, scrubbed text.
	if cli.Status.Code != codes.Error {
		t.Errorf("upstream span status: got %v, want Error", cli.Status.Code)
	}
	if cli.Status.Description != "upstream said: Bearer [REDACTED]" {
		t.Errorf("upstream span status description: got %q, want the scrubbed message", cli.Status.Description)
	}
	checkAttrs(t, "upstream", cli.Attributes, map[string]any{KeyErrorType: ErrorTypeTool})
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// checkAttrs checks that kvs hold want; a key ending in "(absent)" must
// not be there.
func checkAttrs(t *testing.T, span string, kvs []attribute.KeyValue, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	for _, kv := range kvs {
		got[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, w := range want {
		if base, ok := strings.CutSuffix(k, "(absent)"); ok {
			if _, has := got[base]; has {
				t.Errorf("%s span has attribute %s, want none", span, base)
			}
			continue
		}
		if got[k] != w {
			t.Errorf("%s span attribute %s: got %v, want %v", span, k, got[k], w)
		}
	}
}

func TestSpanNames(t *testing.T) {
	tests := []struct {
		c    Call
		want string
	}{
		{Call{Method: "tools/call", Tool: "search"}, "tools/call search"},
		{Call{Method: "prompts/get", Prompt: "analyze-code"}, "prompts/get analyze-code"},
		{Call{Method: "resources/read", ResourceURI: "file:///etc/hosts"}, "resources/read"},
		{Call{Method: "initialize"}, "initialize"},
	}
	for _, tt := range tests {
		if got := tt.c.SpanName(); got != tt.want {
			t.Errorf("%+v.SpanName(): got %q, want %q", tt.c, got, tt.want)
		}
	}
	// Only tool calls are execute_tool operations.
	for _, a := range (Call{Method: "initialize"}).Attrs() {
		if a.Key == KeyGenAIOperationName {
			t.Errorf("initialize has %s, want none", KeyGenAIOperationName)
		}
	}
}

func TestMetaRoundTrip(t *testing.T) {
	tr, exp := newRecorded(t)
	// A span's context injected into _meta and extracted on the other
	// side is the same context, now remote.
	ctx, span := tr.Start(context.Background(), "sender", Kind(SpanKindClient))
	meta := InjectMeta(ctx, nil)
	span.End(nil)
	sent := exp.GetSpans()[0].SpanContext
	if meta[MetaTraceparent] == "" {
		t.Fatal("InjectMeta wrote no traceparent")
	}
	got := trace.SpanContextFromContext(ExtractMeta(context.Background(), meta))
	if got.TraceID() != sent.TraceID() || got.SpanID() != sent.SpanID() || got.TraceFlags() != sent.TraceFlags() || !got.IsRemote() {
		t.Errorf("extracted %v, want %v as remote", got, sent)
	}

	// With the no-op tracer a client's context passes through unchanged.
	in := map[string]string{MetaTraceparent: clientParent, MetaTracestate: "congo=t61rcWkgMzE"}
	ctx = ExtractMeta(context.Background(), in)
	ctx, nop := StartCall(ctx, Nop(), Call{Method: "tools/call", Tool: "x"})
	out := InjectMeta(ctx, map[string]string{MetaTracestate: "stale=1"})
	nop.End(nil)
	if out[MetaTraceparent] != clientParent || out[MetaTracestate] != "congo=t61rcWkgMzE" {
		t.Errorf("nop pass-through: got %v, want the client's traceparent and tracestate", out)
	}

	// Malformed or missing context changes nothing.
	for _, m := range []map[string]string{nil, {}, {MetaTraceparent: "00-zz-yy-01"}, {MetaTraceparent: "00-00000000000000000000000000000000-0000000000000000-01"}} {
		ctx := ExtractMeta(context.Background(), m)
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("ExtractMeta(%v) produced a valid span context", m)
		}
		if got := InjectMeta(ctx, nil); got != nil {
			t.Errorf("InjectMeta without a span: got %v, want nil", got)
		}
	}

	// _meta wins over HTTP headers; HTTP headers are used without it.
	h := http.Header{}
	h.Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	ctx = ExtractHTTP(context.Background(), h)
	if TraceID(ctx) != "11111111111111111111111111111111" {
		t.Errorf("ExtractHTTP: got trace %q", TraceID(ctx))
	}
	if TraceID(ExtractMeta(ctx, nil)) != "11111111111111111111111111111111" {
		t.Error("ExtractMeta without _meta context dropped the HTTP one")
	}
	if TraceID(ExtractMeta(ctx, in)) != clientTraceID {
		t.Error("ExtractMeta did not prefer the _meta context")
	}
	out2 := http.Header{}
	InjectHTTP(ctx, out2)
	if out2.Get("Traceparent") != h.Get("Traceparent") {
		t.Errorf("InjectHTTP: got %q, want %q", out2.Get("Traceparent"), h.Get("Traceparent"))
	}
}

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("boom"), ErrorTypeOther},
		{&CallError{Type: "-32602", Message: "bad params"}, "-32602"},
		{fmt.Errorf("wrapped: %w", &CallError{Type: "timeout"}), "timeout"},
	}
	for _, tt := range tests {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestNilTracer(t *testing.T) {
	ctx, s := StartCall(context.Background(), nil, Call{Method: "tools/call"})
	s.SetAttr(String("k", "v"))
	s.End(errors.New("x"))
	if ctx == nil {
		t.Fatal("nil context")
	}
}

// TestExtractHTTPHeaders: a request's traceparent and baggage headers
// each reach the context on their own, and a request with neither leaves
// the context as it was.
func TestExtractHTTPHeaders(t *testing.T) {
	ctx := context.Background()
	if got := ExtractHTTP(ctx, http.Header{"Content-Type": {"application/json"}}); got != ctx {
		t.Error("a request with no trace headers changed the context")
	}
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if sc := trace.SpanContextFromContext(ExtractHTTP(ctx, h)); sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("traceparent header: span context %v", sc)
	}
	h = http.Header{}
	h.Set("baggage", "tenant=acme")
	if m := baggage.FromContext(ExtractHTTP(ctx, h)).Member("tenant"); m.Value() != "acme" {
		t.Errorf("baggage header alone: member %q, want acme", m.Value())
	}
}

// TestStartUpstreamRoot: the client span of a call to an upstream closed
// to the client is the root of a trace of its own, linked to the call's
// server span, and its context carries nothing of the client's: not its
// trace-id, not its baggage. A tracer that keeps no spans leaves no trace
// context at all.
func TestStartUpstreamRoot(t *testing.T) {
	tr, exp := newRecorded(t)
	h := http.Header{"Traceparent": {clientParent}, "Baggage": {"leak=secret"}}
	ctx, server := StartCall(ExtractHTTP(context.Background(), h), tr, Call{Method: "ping"})
	up, span := StartUpstreamRoot(ctx, tr, Call{Method: "ping"})
	out := http.Header{}
	InjectHTTP(up, out)
	meta := InjectMeta(up, nil)
	span.End(nil)
	server.End(nil)

	tp := out.Get("Traceparent")
	if tp == "" || strings.Contains(tp, clientTraceID) || meta[MetaTraceparent] != tp || Traceparent(up) != tp {
		t.Errorf("got traceparent %q (_meta %q, Traceparent %q), want one and the same of another trace than %s", tp, meta[MetaTraceparent], Traceparent(up), clientTraceID)
	}
	if out.Get("Baggage") != "" || out.Get("Tracestate") != "" || meta[MetaBaggage] != "" {
		t.Errorf("got baggage %q, tracestate %q, want none", out.Get("Baggage"), out.Get("Tracestate"))
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	root, srv := spans[0], spans[1]
	switch {
	case root.Parent.IsValid():
		t.Errorf("the upstream span: got parent %v, want none", root.Parent)
	case root.SpanKind != trace.SpanKindClient:
		t.Errorf("the upstream span: got kind %v, want client", root.SpanKind)
	case len(root.Links) != 1 || !root.Links[0].SpanContext.Equal(srv.SpanContext):
		t.Errorf("the upstream span: got links %v, want one to the server span %v", root.Links, srv.SpanContext)
	case srv.SpanContext.TraceID().String() != clientTraceID:
		t.Errorf("the server span: got trace %s, want the client's", srv.SpanContext.TraceID())
	}
	for _, a := range root.Attributes {
		if a.Key == KeySpanLink {
			t.Errorf("the link pseudo-attribute was recorded: %v", a)
		}
	}

	for _, nop := range []Tracer{nil, Nop()} {
		up, _ := StartUpstreamRoot(ExtractHTTP(context.Background(), h), nop, Call{Method: "ping"})
		out := http.Header{}
		InjectHTTP(up, out)
		if len(out) != 0 || Traceparent(up) != "" || baggage.FromContext(up).Len() != 0 {
			t.Errorf("tracer %T: got %v, want no trace context", nop, out)
		}
	}
}

// TestStartStageNopAllocs: a stage span of a tracer that records nothing
// allocates nothing (appending the span kind to the attributes did, for
// every stage of every call).
func TestStartStageNopAllocs(t *testing.T) {
	ctx := context.Background()
	for _, tr := range []Tracer{nil, Nop()} {
		if n := testing.AllocsPerRun(100, func() {
			got, span := StartStage(ctx, tr, StageClassification)
			span.End(nil)
			if got != ctx {
				t.Fatal("got a new context, want the caller's")
			}
		}); n != 0 {
			t.Errorf("tracer %T: got %v allocations, want 0", tr, n)
		}
	}
}

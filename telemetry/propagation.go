package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Keys of the W3C trace context in MCP params._meta, unprefixed as the
// conventions and SEP-414 say.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
	MetaBaggage     = "baggage"
)

// propagator is W3C Trace Context plus Baggage. It is immutable; Sluice
// never installs a global propagator.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ExtractMeta returns ctx with the remote span context found in an MCP
// request's params._meta (traceparent, tracestate, baggage) as the parent
// of the next span. A missing or malformed traceparent leaves ctx as it
// is, so a context extracted earlier from HTTP headers stays in force; the
// _meta context wins when both are present, as the conventions say.
func ExtractMeta(ctx context.Context, meta map[string]string) context.Context {
	if meta[MetaTraceparent] == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(meta))
}

// InjectMeta writes the trace context of the span in ctx into meta, the
// params._meta of a message about to be forwarded, and returns meta (a new
// map if meta is nil). Existing trace keys are replaced; other keys are
// left alone. With no valid span context in ctx, meta is returned
// unchanged.
func InjectMeta(ctx context.Context, meta map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = make(map[string]string, 2)
	}
	delete(meta, MetaTracestate) // a stale one must not outlive its traceparent
	propagator.Inject(ctx, propagation.MapCarrier(meta))
	return meta
}

// ExtractHTTP returns ctx with the remote span context of an HTTP
// request's traceparent and tracestate headers.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	// Most requests carry neither header; the propagators would then
	// return ctx as it is, after canonicalising both names.
	if len(h["Traceparent"]) == 0 && len(h["Baggage"]) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectHTTP sets traceparent and tracestate headers on an outgoing HTTP
// request from the span in ctx.
func InjectHTTP(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// TraceID returns the hex trace id of the span in ctx, or "" if there is
// none; events and logs carry it to link back to the trace.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Traceparent returns the W3C traceparent (version 00) of the span in
// ctx, or "" if there is none.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + (sc.TraceFlags() & trace.FlagsSampled).String()
}

package gateway

import (
	"context"
	"net/http"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// traceCall starts the server span of one client request that came over
// Streamable HTTP, parented to the trace context the client sent in
// params._meta or, failing that, in HTTP headers. Batches and messages
// that are not requests get no span. The returned end must be called.
func (g *Gateway) traceCall(r *http.Request, x *exchange) (context.Context, func(err error)) {
	ctx := r.Context()
	if g.opts.Tracer == nil || x.batch || x.msgs[0].Kind != intercept.KindRequest {
		return ctx, func(error) {}
	}
	m := x.msgs[0]
	ctx = extractMeta(telemetry.ExtractHTTP(ctx, r.Header), m)
	ctx, span := telemetry.StartCall(ctx, g.opts.Tracer, g.callInfo(x))
	return ctx, span.End
}

// extractMeta takes the client's trace context from params._meta.
func extractMeta(ctx context.Context, m *intercept.Message) context.Context {
	if m.Meta == nil {
		return ctx
	}
	var meta map[string]any
	if json.Unmarshal(m.Meta, &meta) != nil {
		return ctx
	}
	carrier := make(map[string]string, 2)
	for _, k := range []string{telemetry.MetaTraceparent, telemetry.MetaTracestate} {
		if s, ok := meta[k].(string); ok {
			carrier[k] = s
		}
	}
	return telemetry.ExtractMeta(ctx, carrier)
}

// connCall describes a request arriving over a message transport for its
// span. kind is websocket, sse or stdio.
func connCall(m *intercept.Message, cc intercept.CallContext, kind string) telemetry.Call {
	c := telemetry.Call{Method: m.Method, RequestID: string(m.ID), ProtocolVersion: cc.ProtocolVersion, SessionID: cc.SessionID,
		Agent: cc.Agent, Upstream: cc.Upstream, Transport: "tcp", NetworkProtocol: kind}
	switch kind {
	case "stdio":
		c.Transport, c.NetworkProtocol = "pipe", ""
	case "sse":
		c.NetworkProtocol = "http"
	}
	if len(m.ID) > 0 && m.ID[0] == '"' {
		_ = json.Unmarshal(m.ID, &c.RequestID)
	}
	switch m.Method {
	case "tools/call":
		c.Tool = m.Name
	case "prompts/get":
		c.Prompt = m.Name
	case "resources/read":
		c.ResourceURI = m.Name
	}
	return c
}

func (g *Gateway) callInfo(x *exchange) telemetry.Call {
	m := x.msgs[0]
	c := telemetry.Call{Method: m.Method, RequestID: string(m.ID), ProtocolVersion: x.version, Transport: "tcp",
		NetworkProtocol: "http", Agent: x.agent, Upstream: x.rt.up.Name}
	if len(m.ID) > 0 && m.ID[0] == '"' {
		_ = json.Unmarshal(m.ID, &c.RequestID)
	}
	if x.sess != nil {
		c.SessionID = x.sess.id
	}
	switch m.Method {
	case "tools/call":
		c.Tool = m.Name
	case "prompts/get":
		c.Prompt = m.Name
	case "resources/read":
		c.ResourceURI = m.Name
	}
	return c
}

// traceStage runs fn inside an internal span of the call in ctx.
func (g *Gateway) traceStage(ctx context.Context, stage string, fn func(ctx context.Context)) {
	if g.opts.Tracer == nil {
		fn(ctx)
		return
	}
	ctx, span := telemetry.StartStage(ctx, g.opts.Tracer, stage)
	fn(ctx)
	span.End(nil)
}

// traceUpstream starts the client span of a request forwarded to an HTTP
// upstream and puts its trace context in the outgoing headers.
func (g *Gateway) traceUpstream(ctx context.Context, x *exchange, out *http.Request) func(err error) {
	if g.opts.Tracer == nil || x.batch || x.msgs[0].Kind != intercept.KindRequest {
		return func(error) {}
	}
	ctx, span := telemetry.StartUpstream(ctx, g.opts.Tracer, g.callInfo(x))
	telemetry.InjectHTTP(ctx, out.Header)
	return span.End
}

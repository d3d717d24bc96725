package gateway

import (
	"bytes"
	"context"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
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
	// Without tracing the client's trace context is still read, to be
	// passed on to an upstream not closed to the client (upstreamCall),
	// but no span is started.
	ctx = extractMeta(telemetry.ExtractHTTP(ctx, r.Header), m)
	if !telemetry.Records(g.opts.Tracer) {
		return ctx, func(error) {}
	}
	ctx, span := telemetry.StartCall(ctx, g.opts.Tracer, g.callInfo(x))
	return ctx, span.End
}

// extractMeta takes the client's trace context from params._meta.
func extractMeta(ctx context.Context, m *intercept.Message) context.Context {
	// Most calls carry no trace context: a byte search spares them the
	// member scans below.
	if m.Meta == nil || !bytes.Contains(m.Meta, []byte("traceparent")) {
		return ctx
	}
	var carrier map[string]string
	for _, k := range []string{telemetry.MetaTraceparent, telemetry.MetaTracestate} {
		var s string
		if v := intercept.ValidMember(m.Meta, k); v.Kind() == '"' && json.Unmarshal(v, &s) == nil {
			if carrier == nil {
				carrier = make(map[string]string, 2)
			}
			carrier[k] = s
		}
	}
	if carrier == nil {
		return ctx
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
	// As the policy sees it (callContext): a virtual session's, not
	// the inner one carrying the call.
	switch {
	case x.virtual != "":
		c.SessionID = telemetry.SessionRef(x.virtual)
	case x.sess != nil:
		c.SessionID = x.sess.ref()
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
	if !telemetry.Records(g.opts.Tracer) {
		fn(ctx)
		return
	}
	ctx, span := telemetry.StartStage(ctx, g.opts.Tracer, stage)
	fn(ctx)
	span.End(nil)
}

// upstreamCall builds the request forwarding x to its HTTP upstream.
// With tracing, it starts the call's client span and passes the span's
// trace context on in the traceparent header and in params._meta, the
// place the MCP conventions name, so the upstream's span is its child;
// nothing else in the body changes. With metrics, a POST carrying
// requests is one upstream call. end must be called once the answer is
// complete, with what went wrong with the call, if anything.
//
// An upstream closed to the client gets no trace context of the
// client's: a traceparent's ids are 24 bytes of its choosing, and a span
// parented to them carries its trace-id on. The client span is then the
// root of a trace of its own, linked to the call's server span (in the
// client's trace), and the upstream gets its context, in the header and
// in params._meta in place of the client's; with nothing recording spans
// it gets none (telemetry.StartUpstreamRoot).
func (g *Gateway) upstreamCall(ctx context.Context, r *http.Request, x *exchange) (out *http.Request, end func(error), err error) {
	var uc *upCall
	cc := x.callContext()
	closed := g.ic.Closed(ctx, cc)
	msgs, body := x.msgs, x.body
	single := !x.batch && msgs[0].Kind == intercept.KindRequest
	recorded := single && telemetry.Records(g.opts.Tracer)
	switch {
	case recorded:
		ctx, uc = g.startUpCall(ctx, x, g.callInfo(x), traceFor(closed))
	case single, x.requests() != nil:
		_, uc = g.startUpCall(ctx, x, telemetry.Call{}, untraced) // metrics only
	}
	end = uc.end
	if closed {
		// Its ids are the gateway's (ids.go), and so is its trace context:
		// the root span's, or none.
		if !recorded {
			ctx = telemetry.Untraced(ctx)
		}
		var upstreamID func(string) jsontext.Value
		var asked *askedIDs
		if x.sess != nil {
			upstreamID, asked = x.sess.replays.upstreamID, &x.sess.askedUp
		}
		if x.swap, err = swapIDs(x.msgs, x.batch, upstreamID, asked, traceparentOf(ctx)); err != nil {
			return nil, end, err
		}
		msgs, body = x.swap.msgs, x.swap.body
	} else {
		if x.hold != nil {
			x.hold.asIs.Store(true)
		}
		if single {
			m := msgs[0]
			if b, ok := withTraceMeta(ctx, m.Raw, m.Params, m.Meta); ok {
				body = b
			}
		}
	}
	if x.swap != nil && x.sess != nil {
		// A cancellation of one of its requests names the gateway's id
		// until the exchange ends.
		s, sess := x.swap, x.sess
		sess.replays.swapped(s)
		end = func(err error) {
			sess.replays.unswapped(s)
			uc.end(err)
		}
	}
	// An HTTP server's JSON parser does not split lines, but the upstream
	// may be a bridge that passes the body on to a line-framed server, so
	// it gets the form every transport sends (see transport.Compact).
	if body, err = transport.CompactValid(body); err != nil {
		return nil, end, err
	}
	out, err = g.upstreamRequest(ctx, r, x.rt, x.sess, closed, body)
	if err != nil {
		return nil, end, err
	}
	if closed {
		protocolHeaders(out.Header, r, x)
	}
	out.ContentLength = int64(len(body))
	if !x.batch && x.version >= "2026-07-28" {
		// The arguments the tool routes on, as policy read them.
		for k, v := range g.ic.ParamHeaders(x.rt.up.Name, x.msgs[0]) {
			out.Header.Set(k, v)
		}
	}
	return out, end, nil
}

// traceparentOf is the traceparent of the span in ctx as a JSON string,
// or nil if there is none.
func traceparentOf(ctx context.Context) jsontext.Value {
	tp := telemetry.Traceparent(ctx)
	if tp == "" {
		return nil
	}
	return jsontext.Value(`"` + tp + `"`) // hex and dashes: nothing to escape
}

// withGatewayTrace returns raw, a request to an upstream closed to its
// client whose params and params._meta are params and meta, with trace as
// its only trace context (gatewayTrace); raw itself when nothing changes.
func withGatewayTrace(raw, params, meta, trace jsontext.Value) (jsontext.Value, error) {
	if params.Kind() != '{' {
		return raw, nil // no _meta, and none to add
	}
	out, err := gatewayTrace(meta, trace)
	if err != nil || string(out) == string(meta) {
		return raw, err
	}
	if params, err = intercept.WithMember(params, "_meta", out); err != nil {
		return nil, err
	}
	return intercept.WithMember(raw, "params", params)
}

// gatewayTrace returns meta, the params._meta of a request to an upstream
// closed to its client (nil for none), with trace, the gateway's
// traceparent as a JSON string (nil for none), as its only trace context:
// the client's traceparent and tracestate are left out, their ids and text
// being the client's to choose. meta itself when nothing changes.
func gatewayTrace(meta, trace jsontext.Value) (jsontext.Value, error) {
	if meta.Kind() != '{' {
		if trace == nil {
			return meta, nil
		}
		meta = jsontext.Value("{}")
	}
	var err error
	for _, k := range [...]string{telemetry.MetaTraceparent, telemetry.MetaTracestate} {
		if meta, err = intercept.WithoutMember(meta, k); err != nil {
			return nil, err
		}
	}
	if trace == nil {
		return meta, nil
	}
	return intercept.WithMember(meta, telemetry.MetaTraceparent, trace)
}

// withTraceMeta returns raw, a request about to be forwarded whose params
// and params._meta are params and meta, with the trace context of ctx in
// params._meta; it reports false when there is none to add.
func withTraceMeta(ctx context.Context, raw, params, meta jsontext.Value) ([]byte, bool) {
	carrier := telemetry.InjectMeta(ctx, nil) // nil unless ctx has a trace context
	if len(carrier) == 0 || params == nil || params.Kind() != '{' {
		return nil, false
	}
	if meta == nil {
		meta = jsontext.Value("{}")
	}
	var err error
	for _, k := range []string{telemetry.MetaTraceparent, telemetry.MetaTracestate} {
		v, ok := carrier[k]
		if !ok {
			// The client's tracestate belongs to its traceparent, which
			// is replaced: it must not travel with ours.
			if meta, err = intercept.WithoutMember(meta, k); err != nil {
				return nil, false
			}
			continue
		}
		q, _ := jsontext.AppendQuote(nil, v)
		if meta, err = intercept.WithMember(meta, k, q); err != nil {
			return nil, false
		}
	}
	params, err = intercept.WithMember(params, "_meta", meta)
	if err != nil {
		return nil, false
	}
	raw, err = intercept.WithMember(raw, "params", params)
	if err != nil {
		return nil, false
	}
	return raw, true
}

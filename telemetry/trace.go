package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
)

// A Tracer starts spans. Start returns a context carrying the new span, to
// be passed to child spans and to [InjectMeta]. attrs may include a
// [Kind] pseudo-attribute; the default kind is internal. Implementations
// must be safe for concurrent use.
type Tracer interface {
	Start(ctx context.Context, name string, attrs ...Attr) (context.Context, Span)
}

// A Span is one operation in a trace. End must be called exactly once; a
// non-nil err marks the span failed, with error.type from [ErrorType]. A
// Span is used by one goroutine at a time.
type Span interface {
	SetAttr(attrs ...Attr)
	End(err error)
}

// CallError is an error that knows its error.type: a JSON-RPC error code
// ("-32602"), [ErrorTypeTool] for a tool result with isError, or a Sluice
// reason code for a denied call.
type CallError struct {
	// Type is the low-cardinality error.type.
	Type string
	// Message is the status description; it is scrubbed before recording.
	Message string
}

func (e *CallError) Error() string     { return e.Message }
func (e *CallError) ErrorType() string { return e.Type }

// ErrorType returns the error.type of err: the ErrorType method of the
// first error in its chain that has one, or [ErrorTypeOther]. It returns ""
// for nil.
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	var typed interface{ ErrorType() string }
	if errors.As(err, &typed) {
		if t := typed.ErrorType(); t != "" {
			return t
		}
	}
	return ErrorTypeOther
}

// Call describes one governed MCP message for its spans. Empty fields are
// left out of the attributes.
type Call struct {
	// Method is mcp.method.name, e.g. "tools/call". Required.
	Method string
	// Tool is gen_ai.tool.name for tools/call; it is also the span name's
	// target.
	Tool string
	// Prompt is gen_ai.prompt.name for prompts/get; the span name's target
	// when there is no tool.
	Prompt string
	// ResourceURI is mcp.resource.uri for resources/read and the like. It
	// is never part of the span name (high cardinality).
	ResourceURI string
	// SessionID is mcp.session.id.
	SessionID string
	// RequestID is jsonrpc.request.id, the JSON-RPC id as a string; empty
	// for notifications (and null ids, which the conventions leave out).
	RequestID string
	// ProtocolVersion is mcp.protocol.version.
	ProtocolVersion string
	// Transport is network.transport: [TransportPipe] for stdio,
	// [TransportTCP] for HTTP.
	Transport string
	// NetworkProtocol is network.protocol.name: "http" or "websocket".
	NetworkProtocol string
	// TxnID is Sluice's transaction id, the one the audit events carry.
	TxnID string
	// Agent is the calling agent's identity.
	Agent string
	// Upstream is the configured name of the upstream the call goes to.
	Upstream string
}

// SpanName is the conventions' span name: "{mcp.method.name} {target}"
// where target is the tool or prompt name, or just the method.
// Each part is bounded by [BoundName]: the method is the client's text
// as much as the tool is.
func (c Call) SpanName() string {
	m := BoundName(c.Method)
	switch {
	case c.Tool != "":
		return m + " " + BoundName(c.Tool)
	case c.Prompt != "":
		return m + " " + BoundName(c.Prompt)
	}
	return m
}

// Attrs returns the conventions' attributes for c, plus Sluice's own,
// each bounded by [BoundName]: most are the client's to choose.
func (c Call) Attrs() []Attr {
	a := make([]Attr, 0, 12)
	add := func(k, v string) {
		if v != "" {
			a = append(a, String(k, BoundName(v)))
		}
	}
	add(KeyMCPMethodName, c.Method)
	add(KeyGenAIToolName, c.Tool)
	if c.Method == "tools/call" {
		add(KeyGenAIOperationName, OperationExecuteTool)
	}
	add(KeyGenAIPromptName, c.Prompt)
	add(KeyMCPResourceURI, Scrub(c.ResourceURI)) // the agent's text: credentials in it stay out of traces
	add(KeyMCPSessionID, c.SessionID)
	add(KeyJSONRPCRequestID, c.RequestID)
	add(KeyMCPProtocolVersion, c.ProtocolVersion)
	add(KeyNetworkTransport, c.Transport)
	add(KeyNetworkProtocolName, c.NetworkProtocol)
	add(KeyTxnID, c.TxnID)
	add(KeyAgent, c.Agent)
	add(KeyUpstream, c.Upstream)
	return a
}

// StartCall starts the server span of one governed message, as received
// from the client. Call [ExtractMeta] (and [ExtractHTTP]) on ctx first so
// the client's span becomes the parent. A nil t means [Nop].
func StartCall(ctx context.Context, t Tracer, c Call) (context.Context, Span) {
	if records(t) {
		return start(ctx, t, c.SpanName(), SpanKindServer, c.Attrs())
	}
	return ctx, nopSpan{}
}

// Records reports whether t keeps spans: a nil or [Nop] tracer's spans are
// not worth their names and attributes, nor a trace context worth reading.
func Records(t Tracer) bool { return records(t) }

func records(t Tracer) bool {
	_, nop := t.(NopTelemetry)
	return t != nil && !nop
}

// StartUpstream starts the client span of the call as forwarded to the
// upstream, a child of the span in ctx. Inject its context into the
// forwarded message with [InjectMeta] so the upstream's span is its child.
// A nil t means [Nop].
func StartUpstream(ctx context.Context, t Tracer, c Call) (context.Context, Span) {
	if records(t) {
		return start(ctx, t, c.SpanName(), SpanKindClient, c.Attrs())
	}
	return ctx, nopSpan{}
}

// StartUpstreamRoot starts the client span of the call as forwarded to an
// upstream that must not be sent the trace context the call came with:
// one a route rule closed to the client, to which a traceparent's ids are
// 24 bytes of the client's choosing, and the gateway's span would carry
// the client's trace-id on. The span is the root of a trace of its own,
// linked to the span in ctx (the call's server span, in the client's
// trace) so that trace still leads to it. The returned context carries
// the new span and no baggage; when t keeps no spans (nil, [Nop]) it
// carries no trace context at all, so nothing is injected from it.
func StartUpstreamRoot(ctx context.Context, t Tracer, c Call) (context.Context, Span) {
	link := trace.SpanContextFromContext(ctx)
	ctx = Untraced(ctx)
	if !records(t) {
		return ctx, nopSpan{}
	}
	attrs := c.Attrs()
	if link.IsValid() {
		attrs = append(attrs, Attr{Key: KeySpanLink, Value: link})
	}
	return start(ctx, t, c.SpanName(), SpanKindClient, attrs)
}

// Untraced returns ctx without its span context and baggage: a span
// started from it is a root, and [InjectHTTP] and [InjectMeta] write
// nothing from it. Its values and cancellation are those of ctx.
func Untraced(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	}
	if baggage.FromContext(ctx).Len() > 0 {
		ctx = baggage.ContextWithoutBaggage(ctx)
	}
	return ctx
}

// Names of the internal spans of the steps of a governed call.
const (
	StageClassification = "sluice.classification"
	StagePolicy         = "sluice.policy"
	StageApproval       = "sluice.approval"
)

// StartStage starts an internal child span for one step of the call, such
// as [StageClassification] or [StagePolicy]. A nil t means [Nop].
func StartStage(ctx context.Context, t Tracer, stage string, attrs ...Attr) (context.Context, Span) {
	return start(ctx, t, stage, SpanKindInternal, attrs)
}

func start(ctx context.Context, t Tracer, name string, kind SpanKind, attrs []Attr) (context.Context, Span) {
	if !records(t) {
		// What Nop's Start gives, without the attributes' slice that
		// appending the kind would allocate for every stage of every call.
		return ctx, nopSpan{}
	}
	return t.Start(ctx, name, append(attrs, Kind(kind))...)
}

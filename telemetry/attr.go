package telemetry

// Attr is one span attribute. Value is a string, bool, int, int64,
// float64 or []string; anything else is recorded as its fmt.Sprint form.
type Attr struct {
	Key   string
	Value any
}

// String returns a string attribute.
func String(key, value string) Attr { return Attr{Key: key, Value: value} }

// Int returns an integer attribute.
func Int(key string, value int) Attr { return Attr{Key: key, Value: value} }

// Bool returns a boolean attribute.
func Bool(key string, value bool) Attr { return Attr{Key: key, Value: value} }

// Float returns a floating-point attribute.
func Float(key string, value float64) Attr { return Attr{Key: key, Value: value} }

// Attribute keys of the OpenTelemetry MCP semantic conventions
// (opentelemetry.io/docs/specs/semconv/gen-ai/mcp, status Development).
// OpenTelemetry's Go semconv packages no longer carry the MCP names since
// they moved to the GenAI conventions repository, so they are spelled out
// here.
const (
	KeyMCPMethodName          = "mcp.method.name"
	KeyMCPSessionID           = "mcp.session.id"
	KeyMCPProtocolVersion     = "mcp.protocol.version"
	KeyMCPResourceURI         = "mcp.resource.uri"
	KeyGenAIToolName          = "gen_ai.tool.name"
	KeyGenAIPromptName        = "gen_ai.prompt.name"
	KeyGenAIOperationName     = "gen_ai.operation.name"
	KeyJSONRPCRequestID       = "jsonrpc.request.id"
	KeyJSONRPCProtocolVersion = "jsonrpc.protocol.version"
	KeyRPCResponseStatusCode  = "rpc.response.status_code"
	KeyNetworkTransport       = "network.transport"
	KeyNetworkProtocolName    = "network.protocol.name"
	KeyServerAddress          = "server.address"
	KeyServerPort             = "server.port"
	KeyErrorType              = "error.type"
)

// Values of the conventions' enumerated attributes.
const (
	// OperationExecuteTool is gen_ai.operation.name on tools/call spans.
	OperationExecuteTool = "execute_tool"
	// TransportPipe is network.transport for stdio.
	TransportPipe = "pipe"
	// TransportTCP is network.transport for HTTP.
	TransportTCP = "tcp"
	// ErrorTypeTool is error.type when a tools/call result has isError.
	ErrorTypeTool = "tool_error"
	// ErrorTypeOther is error.type for an error that names no type.
	ErrorTypeOther = "_OTHER"
)

// Sluice's own span attributes.
const (
	KeyTxnID        = "sluice.txn_id"
	KeyUpstream     = "sluice.upstream"
	KeyAgent        = "sluice.agent"
	KeyDecision     = "sluice.decision"
	KeyReason       = "sluice.reason"
	KeyRuleID       = "sluice.rule_id"
	KeyPolicyVer    = "sluice.policy_version"
	KeyCapability   = "sluice.classification.capability_class"
	KeyConfidence   = "sluice.classification.composite_confidence"
	KeyConsistent   = "sluice.classification.consistent_with_declaration"
	KeyBreakerState = "sluice.breaker.state"
)

// KeySpanKind is the key of the pseudo-attribute [Kind] makes. It is
// consumed by the tracer and never recorded.
const KeySpanKind = "span.kind"

// SpanKind is the OpenTelemetry span kind.
type SpanKind int

const (
	SpanKindInternal SpanKind = iota
	SpanKindServer
	SpanKindClient
)

// Kind returns the pseudo-attribute that sets a span's kind when passed to
// [Tracer.Start]; it is only meaningful there. Kinds are not a separate
// Start parameter so that Tracer stays one method.
func Kind(k SpanKind) Attr { return Attr{Key: KeySpanKind, Value: k} }

// KeySpanLink is the key of the pseudo-attribute that links a span to
// another, whose trace.SpanContext is its value ([StartUpstreamRoot]
// makes one). It is consumed by the tracer and never recorded; a tracer
// that does not know it loses the link and nothing else.
const KeySpanLink = "span.link"

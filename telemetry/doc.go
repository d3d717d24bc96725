// Package telemetry is how the rest of Sluice reports what it does: spans,
// metrics and audit events. It is a leaf: it imports no other Sluice
// package, and gateway, policy and classifier use only its small
// interfaces, never OpenTelemetry directly.
//
//   - [Tracer] and [Span] make spans; [StartCall], [StartUpstream] and
//     [StartStage] name and attribute them after the OpenTelemetry MCP
//     semantic conventions. [StartUpstreamRoot] starts the span of a call
//     to an upstream that must not learn the client's trace context: the
//     root of a trace of its own, linked to the call's.
//   - [Metrics] records decisions, latencies, breaker states and queue
//     depths.
//   - [ExtractMeta], [InjectMeta], [ExtractHTTP] and [InjectHTTP] carry W3C
//     trace context through MCP params._meta and HTTP headers;
//     [Traceparent] writes one, [Untraced] drops it from a context.
//   - [Event] and its typed builders ([PolicyEnforcement],
//     [IntentClassification], …) describe what the audit store keeps;
//     [Redactor] makes sure tool arguments are stored only redacted or
//     hashed, and [Scrub] and [ScrubHandler] keep credentials out of logs.
//
// [Nop] does nothing and is what a component uses when it is given no
// telemetry; [New] builds the OpenTelemetry implementation from a
// [Config], whose zero value is also a no-op.
//
// Usage:
//
//	p, err := telemetry.New(ctx, telemetry.Config{Traces: telemetry.ExporterOTLPHTTP, Prometheus: true})
//	if err != nil { ... }
//	defer p.Shutdown(context.Background())
//	mux.Handle("/metrics", p.MetricsHandler())
//
//	ctx = telemetry.ExtractMeta(ctx, meta) // the client's traceparent, if any
//	ctx, span := telemetry.StartCall(ctx, p.Tracer(), telemetry.Call{Method: "tools/call", Tool: "search"})
//	defer func() { span.End(err) }()
package telemetry

package telemetry

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// benchArgs are the arguments of a typical tools/call, with one secret.
var benchArgs = []byte(`{"owner":"acme","repo":"api","title":"Crash on start","body":"Steps to reproduce: run the server with --port 8080 and open /health. Expected 200, got 500.","labels":["bug","p1"],"assignees":["alice"],"auth":{"token":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}`)

// BenchmarkPolicyEvent is the per-call cost of the audit event: redacting
// and hashing the arguments and building the sluice.policy_enforced
// event.
func BenchmarkPolicyEvent(b *testing.B) {
	for _, keep := range []bool{false, true} {
		name := "hash"
		if keep {
			name = "keep"
		}
		b.Run(name, func(b *testing.B) {
			r := Redactor{KeepArguments: keep}
			b.ReportAllocs()
			for b.Loop() {
				e := PolicyEnforcement{
					Time: t0, TxnID: "0c5f9e0b8d3a4f1e9a7b6c5d4e3f2a1b", Agent: "claude-code", Session: "s", Upstream: "github",
					Tool: "create_issue", CallID: "42", Decision: "allow", Reason: "tool_allowed", RuleID: "r",
					Latency: 30 * time.Microsecond, Evidence: Evidence{MatchedToolName: "create_issue"},
					Arguments: r.Arguments(benchArgs),
				}.Event()
				if e.Attrs["arguments_sha256"] == nil {
					b.Fatal("no hash")
				}
			}
		})
	}
}

// BenchmarkScrub scrubs a log line without and with a credential.
func BenchmarkScrub(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"clean", "upstream github answered 404 to POST /repos/acme/api/issues after 120ms; retrying in 2s (attempt 2 of 3)"},
		{"credential", "upstream github answered 401 to POST /repos/acme/api/issues with Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789 after 120ms"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Scrub(c.line)
			}
		})
	}
}

// BenchmarkCallSpans is the tracing cost of one governed call: the
// server span, two steps, the upstream span and the _meta injection,
// with the OpenTelemetry SDK sampling everything (exported nowhere) and
// with the no-op tracer.
func BenchmarkCallSpans(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		tr   Tracer
	}{{"otel", NewTracer(tp)}, {"nop", Nop()}} {
		b.Run(c.name, func(b *testing.B) {
			call := Call{Method: "tools/call", Tool: "create_issue", SessionID: "s", RequestID: "42", TxnID: "t", Upstream: "github"}
			meta := map[string]string{MetaTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
			b.ReportAllocs()
			for b.Loop() {
				ctx := ExtractMeta(context.Background(), meta)
				ctx, srv := StartCall(ctx, c.tr, call)
				_, cls := StartStage(ctx, c.tr, StageClassification)
				cls.End(nil)
				_, pol := StartStage(ctx, c.tr, StagePolicy)
				pol.End(nil)
				uctx, up := StartUpstream(ctx, c.tr, call)
				_ = InjectMeta(uctx, map[string]string{})
				up.End(nil)
				srv.End(nil)
			}
		})
	}
}

// BenchmarkMetrics is the cost of the metrics of one call.
func BenchmarkMetrics(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	m, err := NewMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Decision("allow", "tool_allowed", 30*time.Microsecond)
		m.Classification(time.Millisecond)
		m.Upstream("github", 20*time.Millisecond, nil)
	}
}

package gateway

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackLongMethodSpanName: a client's request with a method of
// 64 KiB starts a server span named by it before the gateway refuses the
// method; the name is bounded as the method's attribute is.
func TestAttackLongMethodSpanName(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	f := newFixture(t, allowEcho, Options{Tracer: telemetry.NewTracer(tp)})
	method := strings.Repeat("m", 64<<10)
	post(t, f.gw.URL+"/mcp/demo", map[string]string{"Mcp-Protocol-Version": "2025-06-18"},
		`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`)
	spans := exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no span for the call")
	}
	for _, s := range spans {
		if len(s.Name) > 2*telemetry.MaxRecordedName+1 {
			t.Errorf("span name of %d bytes, want at most %d", len(s.Name), 2*telemetry.MaxRecordedName+1)
		}
	}
}

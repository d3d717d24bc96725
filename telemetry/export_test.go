package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPrometheusMetrics(t *testing.T) {
	ctx := context.Background()
	p, err := New(ctx, Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	m := p.Metrics()
	m.Decision("deny", "tool_denied", 2*time.Millisecond)
	m.Decision("deny", "tool_denied", 3*time.Millisecond)
	m.Decision("allow", "tool_allowed", 100*time.Microsecond)
	m.Classification(40 * time.Millisecond)
	m.Upstream("github", 120*time.Millisecond, nil)
	m.Upstream("github", time.Second, &CallError{Type: "timeout"})
	m.BreakerState("github", "open")
	m.MemoryStore(42, 7)
	m.QueueDepth(3)
	m.AuditLost(5)
	m.AuditLost(2)
	m.AuditAvailable(false)

	srv := httptest.NewServer(p.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got %s, want 200", resp.Status)
	}
	text := string(body)
	for _, want := range []struct{ series, value string }{
		{`sluice_decisions_total{`, ""},
		{`outcome="deny"`, ""},
		{`reason="tool_denied"`, ""},
		{`sluice_decision_duration_seconds_bucket{`, ""},
		{`sluice_classification_duration_seconds_count{`, " 1"},
		{`sluice_upstream_duration_seconds_count{`, " 2"},
		{`sluice_upstream_errors_total{`, " 1"},
		{`sluice_breaker_state{`, " 2"},
		{`sluice_memory_store_size{`, " 42"},
		{`sluice_memory_store_evictions_total{`, " 7"},
		{`sluice_audit_queue_depth{`, " 3"},
		{`sluice_audit_events_lost_total{`, " 7"},
		{`sluice_audit_available{`, " 0"},
	} {
		line := findLine(text, want.series)
		if line == "" || !strings.HasSuffix(line, want.value) {
			t.Errorf("metrics: no line with %q ending in %q; got line %q", want.series, want.value, line)
		}
	}
	deny := ""
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "sluice_decisions_total{") && strings.Contains(l, `outcome="deny"`) {
			deny = l
		}
	}
	if !strings.HasSuffix(deny, " 2") {
		t.Errorf("deny counter: got %q, want value 2\n%s", deny, text)
	}
}

func findLine(text, substr string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

func TestZeroConfigIsNop(t *testing.T) {
	p, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Tracer().(NopTelemetry); !ok {
		t.Errorf("zero Config tracer: got %T, want NopTelemetry", p.Tracer())
	}
	if _, ok := p.Metrics().(NopTelemetry); !ok {
		t.Errorf("zero Config metrics: got %T, want NopTelemetry", p.Metrics())
	}
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("metrics handler without Prometheus: got %d, want 404", rec.Code)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	var nilP *Provider
	if _, ok := nilP.Tracer().(NopTelemetry); !ok || nilP.Shutdown(context.Background()) != nil {
		t.Error("nil *Provider is not a no-op")
	}
}

func TestStdoutExporter(t *testing.T) {
	var buf bytes.Buffer
	ctx := context.Background()
	p, err := New(ctx, Config{Traces: ExporterStdout, Metrics: ExporterStdout, Stdout: &buf, ServiceName: "sluice-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := StartCall(ctx, p.Tracer(), Call{Method: "tools/call", Tool: "search"})
	span.End(nil)
	p.Metrics().Decision("allow", "tool_allowed", time.Millisecond)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"tools/call search"`, `"mcp.method.name"`, `sluice-test`, `sluice.decisions`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("stdout export lacks %s:\n%s", want, buf.String())
		}
	}
}

// TestOTLPExporters builds each OTLP exporter against a local endpoint
// and checks that spans reach it; exporters connect lazily, so nothing
// listening is fine for construction.
func TestOTLPExporters(t *testing.T) {
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx := context.Background()
	p, err := New(ctx, Config{Traces: ExporterOTLPHTTP, Metrics: ExporterOTLPHTTP, Endpoint: srv.URL, Headers: map[string]string{"x-api-key": "k"}})
	if err != nil {
		t.Fatal(err)
	}
	_, span := StartCall(ctx, p.Tracer(), Call{Method: "tools/call", Tool: "search"})
	span.End(nil)
	p.Metrics().QueueDepth(1)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for len(got) > 0 {
		paths[<-got] = true
	}
	if !paths["/v1/traces"] || !paths["/v1/metrics"] {
		t.Errorf("OTLP/HTTP posts: got %v, want /v1/traces and /v1/metrics", paths)
	}

	g, err := New(ctx, Config{Traces: ExporterOTLPGRPC, Metrics: ExporterOTLPGRPC, Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_ = g.Shutdown(sctx) // nothing listens; only construction and teardown are checked
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		c       Config
		wantErr string
	}{
		{Config{}, ""},
		{Config{Traces: ExporterOTLPGRPC, Metrics: ExporterStdout, Prometheus: true, Endpoint: "https://otel.example:4317", SampleRatio: 0.5}, ""},
		{Config{Traces: "jaeger"}, "telemetry.traces"},
		{Config{Metrics: "statsd"}, "telemetry.metrics"},
		{Config{SampleRatio: 1.5}, "telemetry.sample_ratio"},
		{Config{MetricInterval: -time.Second}, "telemetry.metric_interval"},
		{Config{Endpoint: "127.0.0.1:4318"}, "telemetry.endpoint"},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Validate(%+v): got %v, want nil", tt.c, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Validate(%+v): got %v, want an error naming %s", tt.c, err, tt.wantErr)
		}
	}
	if _, err := New(context.Background(), Config{Traces: "jaeger"}); err == nil {
		t.Error("New with an invalid Config: got nil error")
	}
}

func TestBreakerStateValue(t *testing.T) {
	for state, want := range map[string]int64{"closed": 0, "half-open": 1, "open": 2, "weird": -1} {
		if got := BreakerStateValue(state); got != want {
			t.Errorf("BreakerStateValue(%q): got %d, want %d", state, got, want)
		}
	}
}

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter names where spans or metrics go.
type Exporter string

const (
	// ExporterNone (the zero value) exports nothing.
	ExporterNone Exporter = ""
	// ExporterOTLPHTTP sends OTLP over HTTP/protobuf (collector port 4318).
	ExporterOTLPHTTP Exporter = "otlp-http"
	// ExporterOTLPGRPC sends OTLP over gRPC (collector port 4317).
	ExporterOTLPGRPC Exporter = "otlp-grpc"
	// ExporterStdout writes JSON lines to Config.Stdout, for debugging.
	ExporterStdout Exporter = "stdout"
)

// Config says where telemetry goes. The zero value sends nothing anywhere
// and makes [New] return a Provider whose Tracer and Metrics are [Nop].
type Config struct {
	// Traces is the span exporter; empty means no tracing.
	Traces Exporter `yaml:"traces" json:"traces,omitempty"`
	// Metrics is the push exporter for metrics; empty means none. It is
	// independent of Prometheus: both may be on.
	Metrics Exporter `yaml:"metrics" json:"metrics,omitempty"`
	// Prometheus serves metrics for scraping through
	// [Provider.MetricsHandler], mounted by the caller at /metrics.
	Prometheus bool `yaml:"prometheus" json:"prometheus,omitempty"`
	// TraceURL, if set, is where a trace can be seen (Jaeger, Tempo,
	// Honeycomb…), with {trace_id} standing for the id: the console links
	// each call to it.
	TraceURL string `yaml:"trace_url" json:"trace_url,omitempty"`
	// Endpoint is the OTLP collector's base URL, e.g.
	// http://127.0.0.1:4318 for otlp-http (spans go to its /v1/traces,
	// metrics to /v1/metrics, as with OTEL_EXPORTER_OTLP_ENDPOINT) or
	// http://127.0.0.1:4317 for otlp-grpc; the http scheme means no TLS.
	// Empty means the exporter's default (localhost, TLS).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Headers are sent with every OTLP export, e.g. an API key.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// ServiceName is the service.name resource attribute; empty means
	// "sluice".
	ServiceName string `yaml:"service_name" json:"service_name,omitempty"`
	// ServiceVersion is the service.version resource attribute; empty
	// leaves it out.
	ServiceVersion string `yaml:"service_version" json:"service_version,omitempty"`
	// SampleRatio is the fraction of new traces sampled, in (0, 1]; zero
	// means 1. A call whose client sent a sampled traceparent is always
	// sampled (parent-based sampling).
	SampleRatio float64 `yaml:"sample_ratio" json:"sample_ratio,omitempty"`
	// MetricInterval is how often pushed metrics are exported; zero means
	// 60s.
	MetricInterval time.Duration `yaml:"metric_interval" json:"metric_interval,omitempty"`
	// Stdout is where the stdout exporters write; nil means os.Stdout.
	Stdout io.Writer `yaml:"-" json:"-"`
	// Logger gets a warning, at most every 10s, while spans are dropped
	// because the trace exporter is not keeping up; nil logs nothing
	// (the sluice.telemetry.spans_dropped metric counts them either way).
	Logger *slog.Logger `yaml:"-" json:"-"`
}

// Validate reports the first thing wrong with c, naming the field.
func (c Config) Validate() error {
	for _, e := range []struct {
		field string
		v     Exporter
	}{{"traces", c.Traces}, {"metrics", c.Metrics}} {
		switch e.v {
		case ExporterNone, ExporterOTLPHTTP, ExporterOTLPGRPC, ExporterStdout:
		default:
			return fmt.Errorf("telemetry.%s: unknown exporter %q (want %q, %q, %q or empty)", e.field, e.v, ExporterOTLPHTTP, ExporterOTLPGRPC, ExporterStdout)
		}
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("telemetry.sample_ratio: %v is not in (0, 1]", c.SampleRatio)
	}
	if c.MetricInterval < 0 {
		return fmt.Errorf("telemetry.metric_interval: %v is negative", c.MetricInterval)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("telemetry.endpoint: %q is not an http(s) URL such as http://127.0.0.1:4318", c.Endpoint)
		}
	}
	return nil
}

// Provider owns the OpenTelemetry SDK pipeline built from a [Config]. A
// nil *Provider is valid and behaves as the zero Config: [Nop] tracer and
// metrics, a 404 metrics handler. Its methods are safe for concurrent
// use.
type Provider struct {
	tracer   Tracer
	metrics  Metrics
	handler  http.Handler
	shutdown []func(context.Context) error
}

// New builds the exporters c asks for. Exporters connect lazily, so an
// unreachable collector is not an error here; its export failures go to
// OpenTelemetry's error handler. Call Shutdown to flush.
func New(ctx context.Context, c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Provider{tracer: Nop(), metrics: Nop(), handler: http.NotFoundHandler()}
	name := c.ServiceName
	if name == "" {
		name = "sluice"
	}
	kvs := []attribute.KeyValue{attribute.String("service.name", name)}
	if c.ServiceVersion != "" {
		kvs = append(kvs, attribute.String("service.version", c.ServiceVersion))
	}
	res := resource.NewSchemaless(kvs...)
	out := c.Stdout
	if out == nil {
		out = os.Stdout
	}

	var spans *spanQueue
	if c.Traces != ExporterNone {
		exp, err := traceExporter(ctx, c, out)
		if err != nil {
			return nil, fmt.Errorf("telemetry.traces: %w", err)
		}
		ratio := c.SampleRatio
		if ratio == 0 {
			ratio = 1
		}
		spans = newSpanQueue(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBlocking()), c.Logger, spanQueueSize)
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithResource(res),
			sdktrace.WithSpanProcessor(spans),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		)
		p.tracer = NewTracer(tp)
		p.shutdown = append(p.shutdown, tp.Shutdown)
	}

	if c.Metrics == ExporterNone && !c.Prometheus {
		return p, nil
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if c.Metrics != ExporterNone {
		exp, err := metricExporter(ctx, c, out)
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry.metrics: %w", err)
		}
		interval := c.MetricInterval
		if interval == 0 {
			interval = time.Minute
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	}
	if c.Prometheus {
		// A registry of our own rather than the global default: two
		// Providers (tests, reloads) must not collide.
		reg := prometheus.NewRegistry()
		// The Go runtime (goroutines, heap, GC) and the process (RSS, open
		// files), under their usual go_ and process_ names.
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry.prometheus: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry.prometheus: %w", err)
		}
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry.prometheus: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(exp))
		p.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	p.shutdown = append(p.shutdown, mp.Shutdown)
	m, err := NewMetrics(mp)
	if err != nil {
		_ = p.Shutdown(ctx)
		return nil, err
	}
	p.metrics = m
	if spans != nil {
		_, err := mp.Meter(InstrumentationName).Int64ObservableCounter(MetricSpansDropped, metric.WithUnit("{span}"),
			metric.WithDescription("Spans dropped because the trace exporter was not keeping up (its collector slow or unreachable)"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(spans.Dropped())
				return nil
			}))
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, err
		}
	}
	return p, nil
}

func traceExporter(ctx context.Context, c Config, out io.Writer) (sdktrace.SpanExporter, error) {
	switch c.Traces {
	case ExporterOTLPHTTP:
		opts := []otlptracehttp.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(signalURL(c.Endpoint, "/v1/traces")))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	case ExporterOTLPGRPC:
		opts := []otlptracegrpc.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	case ExporterStdout:
		return stdouttrace.New(stdouttrace.WithWriter(out))
	}
	return nil, fmt.Errorf("unknown exporter %q", c.Traces)
}

func metricExporter(ctx context.Context, c Config, out io.Writer) (sdkmetric.Exporter, error) {
	switch c.Metrics {
	case ExporterOTLPHTTP:
		opts := []otlpmetrichttp.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(signalURL(c.Endpoint, "/v1/metrics")))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlpmetrichttp.WithHeaders(c.Headers))
		}
		return otlpmetrichttp.New(ctx, opts...)
	case ExporterOTLPGRPC:
		opts := []otlpmetricgrpc.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(c.Endpoint))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(c.Headers))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	case ExporterStdout:
		return stdoutmetric.New(stdoutmetric.WithWriter(out))
	}
	return nil, fmt.Errorf("unknown exporter %q", c.Metrics)
}

// signalURL appends an OTLP/HTTP signal path to a base endpoint URL.
func signalURL(base, path string) string {
	return strings.TrimSuffix(base, "/") + path
}

// Tracer returns the tracer, [Nop] when tracing is off.
func (p *Provider) Tracer() Tracer {
	if p == nil {
		return Nop()
	}
	return p.tracer
}

// Metrics returns the metrics, [Nop] when metrics are off.
func (p *Provider) Metrics() Metrics {
	if p == nil {
		return Nop()
	}
	return p.metrics
}

// MetricsHandler returns the Prometheus scrape handler, to be mounted at
// /metrics; it answers 404 when Config.Prometheus is off.
func (p *Provider) MetricsHandler() http.Handler {
	if p == nil {
		return http.NotFoundHandler()
	}
	return p.handler
}

// Shutdown flushes pending spans and metrics and stops the exporters,
// waiting no longer than ctx allows.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, f := range p.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the OpenTelemetry instrumentation scope of
// Sluice's spans and metrics.
const InstrumentationName = "github.com/sluicehq/sluice"

// NewTracer returns a [Tracer] over an OpenTelemetry tracer provider, such
// as the SDK's with an in-memory exporter in tests.
func NewTracer(tp trace.TracerProvider) Tracer {
	return otelTracer{t: tp.Tracer(InstrumentationName)}
}

type otelTracer struct{ t trace.Tracer }

var _ Tracer = otelTracer{}

func (o otelTracer) Start(ctx context.Context, name string, attrs ...Attr) (context.Context, Span) {
	kind := trace.SpanKindInternal
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	var links []trace.Link
	for _, a := range attrs {
		if a.Key == KeySpanLink {
			if sc, ok := a.Value.(trace.SpanContext); ok {
				links = append(links, trace.Link{SpanContext: sc})
			}
			continue
		}
		if a.Key == KeySpanKind {
			switch a.Value {
			case SpanKindServer:
				kind = trace.SpanKindServer
			case SpanKindClient:
				kind = trace.SpanKindClient
			}
			continue
		}
		kvs = append(kvs, otelAttr(a))
	}
	if len(links) > 0 {
		// An option more is an allocation more: only the spans that link
		// (StartUpstreamRoot) pay it.
		ctx, s := o.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(kvs...), trace.WithLinks(links...))
		return ctx, otelSpan{s: s}
	}
	ctx, s := o.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(kvs...))
	return ctx, otelSpan{s: s}
}

type otelSpan struct{ s trace.Span }

func (o otelSpan) SetAttr(attrs ...Attr) {
	if !o.s.IsRecording() {
		return
	}
	for _, a := range attrs {
		if a.Key != KeySpanKind {
			o.s.SetAttributes(otelAttr(a))
		}
	}
}

func (o otelSpan) End(err error) {
	if err != nil {
		o.s.SetAttributes(attribute.String(KeyErrorType, ErrorType(err)))
		// The message may quote a token from an upstream's error text,
		// and be as long as the upstream likes.
		o.s.SetStatus(codes.Error, Scrub(Bound(err.Error(), MaxRecordedText)))
	}
	o.s.End()
}

func otelAttr(a Attr) attribute.KeyValue {
	k := attribute.Key(a.Key)
	switch v := a.Value.(type) {
	case string:
		return k.String(v)
	case bool:
		return k.Bool(v)
	case int:
		return k.Int(v)
	case int64:
		return k.Int64(v)
	case float64:
		return k.Float64(v)
	case []string:
		return k.StringSlice(v)
	case fmt.Stringer:
		return k.String(v.String())
	}
	return k.String(fmt.Sprint(a.Value))
}

// Names of Sluice's metric instruments, as OpenTelemetry names them; the
// Prometheus handler shows them with dots as underscores, counters with
// _total and durations with _seconds (sluice_decisions_total,
// sluice_decision_duration_seconds, …).
const (
	MetricDecisions              = "sluice.decisions"
	MetricDecisionDuration       = "sluice.decision.duration"
	MetricClassificationDuration = "sluice.classification.duration"
	MetricUpstreamDuration       = "sluice.upstream.duration"
	MetricUpstreamErrors         = "sluice.upstream.errors"
	MetricBreakerState           = "sluice.breaker.state"
	MetricMemoryStoreSize        = "sluice.memory_store.size"
	MetricMemoryStoreEvictions   = "sluice.memory_store.evictions"
	MetricQueueDepth             = "sluice.audit.queue_depth"
	MetricAuditLost              = "sluice.audit.events_lost"
	MetricAuditAvailable         = "sluice.audit.available"
	MetricSpansDropped           = "sluice.telemetry.spans_dropped"
)

// durationBuckets are in seconds, from 50µs (a cached decision) to 30s (a
// slow upstream).
var durationBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// NewMetrics returns [Metrics] recording into an OpenTelemetry meter
// provider. It fails only if the provider rejects an instrument.
func NewMetrics(mp metric.MeterProvider) (Metrics, error) {
	m := mp.Meter(InstrumentationName)
	o := &otelMetrics{}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	seconds := []metric.Float64HistogramOption{metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...)}
	var err error
	o.decisions, err = m.Int64Counter(MetricDecisions, metric.WithUnit("{decision}"),
		metric.WithDescription("Policy decisions by outcome and reason."))
	check(err)
	o.decisionDur, err = m.Float64Histogram(MetricDecisionDuration,
		append(seconds, metric.WithDescription("Time taken to decide about one call."))...)
	check(err)
	o.classDur, err = m.Float64Histogram(MetricClassificationDuration,
		append(seconds, metric.WithDescription("Time taken to classify one call."))...)
	check(err)
	o.upDur, err = m.Float64Histogram(MetricUpstreamDuration,
		append(seconds, metric.WithDescription("Duration of calls to upstreams."))...)
	check(err)
	o.upErr, err = m.Int64Counter(MetricUpstreamErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Failed calls to upstreams by error type."))
	check(err)
	o.breaker, err = m.Int64Gauge(MetricBreakerState, metric.WithUnit("{state}"),
		metric.WithDescription("Circuit breaker state per upstream: 0 closed, 1 half-open, 2 open."))
	check(err)
	size, err := m.Int64ObservableGauge(MetricMemoryStoreSize, metric.WithUnit("{entry}"),
		metric.WithDescription("Entries in the route memory."))
	check(err)
	evict, err := m.Int64ObservableCounter(MetricMemoryStoreEvictions, metric.WithUnit("{entry}"),
		metric.WithDescription("Entries evicted from the route memory."))
	check(err)
	queue, err := m.Int64ObservableGauge(MetricQueueDepth, metric.WithUnit("{event}"),
		metric.WithDescription("Events waiting in the audit queue."))
	check(err)
	check(o.limitInstruments.init(m))
	o.auditLost, err = m.Int64Counter(MetricAuditLost, metric.WithUnit("{event}"),
		metric.WithDescription("Events the audit store could not write (disk full, data directory removed)."))
	check(err)
	available, err := m.Int64ObservableGauge(MetricAuditAvailable,
		metric.WithDescription("1 while the audit store can write events, 0 from a failed write until one succeeds."))
	check(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("telemetry: creating instruments: %w", errors.Join(errs...))
	}
	_, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		obs.ObserveInt64(size, o.memSize.Load())
		obs.ObserveInt64(evict, int64(o.memEvictions.Load()))
		obs.ObserveInt64(queue, o.queueDepth.Load())
		if o.auditFailing.Load() {
			obs.ObserveInt64(available, 0)
		} else {
			obs.ObserveInt64(available, 1)
		}
		return nil
	}, size, evict, queue, available)
	if err != nil {
		return nil, fmt.Errorf("telemetry: registering callback: %w", err)
	}
	return o, nil
}

// otelMetrics keeps the observed values in atomics and reports them when
// the reader collects, so the hot path never waits on the SDK.
type otelMetrics struct {
	decisions   metric.Int64Counter
	decisionDur metric.Float64Histogram
	classDur    metric.Float64Histogram
	upDur       metric.Float64Histogram
	upErr       metric.Int64Counter
	breaker     metric.Int64Gauge
	auditLost   metric.Int64Counter

	memSize      atomic.Int64
	memEvictions atomic.Uint64
	queueDepth   atomic.Int64
	auditFailing atomic.Bool

	limitInstruments // the gateway's resource use (limits.go)
}

var _ Metrics = (*otelMetrics)(nil)

// ctx for recording: the SDK reads only exemplar information from it.
var bg = context.Background()

func (o *otelMetrics) Decision(outcome, reason string, d time.Duration) {
	o.decisions.Add(bg, 1, metric.WithAttributes(attribute.String("outcome", outcome), attribute.String("reason", reason)))
	o.decisionDur.Record(bg, d.Seconds(), metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (o *otelMetrics) Classification(d time.Duration) {
	o.classDur.Record(bg, d.Seconds())
}

func (o *otelMetrics) Upstream(name string, d time.Duration, err error) {
	up := attribute.String("upstream", name)
	o.upDur.Record(bg, d.Seconds(), metric.WithAttributes(up))
	if err != nil {
		o.upErr.Add(bg, 1, metric.WithAttributes(up, attribute.String(KeyErrorType, ErrorType(err))))
	}
}

func (o *otelMetrics) BreakerState(name, state string) {
	o.breaker.Record(bg, BreakerStateValue(state), metric.WithAttributes(attribute.String("upstream", name)))
}

func (o *otelMetrics) MemoryStore(size int, evictions uint64) {
	o.memSize.Store(int64(size))
	o.memEvictions.Store(evictions)
}

func (o *otelMetrics) QueueDepth(n int) { o.queueDepth.Store(int64(n)) }

func (o *otelMetrics) AuditLost(n int) { o.auditLost.Add(bg, int64(n)) }

func (o *otelMetrics) AuditAvailable(ok bool) { o.auditFailing.Store(!ok) }

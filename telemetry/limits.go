package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of the gateway's resource limits.
const (
	// MetricSessions is the open downstream sessions by transport
	// (streamable-http, sse, websocket).
	MetricSessions = "sluice.sessions"
	// MetricRequestBodyInflight is the request body bytes the gateway
	// holds now, bounded by max_inflight_body_bytes.
	MetricRequestBodyInflight = "sluice.request_body.inflight"
	// MetricLimitRefusals counts requests refused by a resource limit, by
	// the limit's config key.
	MetricLimitRefusals = "sluice.limit.refusals"
	// MetricMessagesWithheld counts messages from upstreams not delivered
	// to a client, by reason (foreign_task: about an MCP task the client
	// does not own; unreadable: not JSON-RPC as the gateway reads it;
	// too_large: longer than the gateway reads; stray: a result for a
	// request not waiting on that stream).
	MetricMessagesWithheld = "sluice.messages.withheld"
	// MetricHeadersWithheld counts client HTTP headers not sent to an
	// upstream a route rule closes to the client, by upstream.
	MetricHeadersWithheld = "sluice.headers.withheld"
	// MetricStderrDropped counts lines a stdio upstream wrote to its
	// stderr that were not logged (over the rate bound, or the log's
	// sink too slow), by upstream.
	MetricStderrDropped = "sluice.stdio.stderr_dropped"
	// MetricClassifierOverBudget counts calls the LLM classifier did not
	// send its provider for being over its budget (classifier.budget),
	// which got every axis at its conservative default instead, by the
	// budget's scope (agent, total).
	MetricClassifierOverBudget = "sluice.classifier.over_budget"
)

// TODO(approvals): a gauge of pending approvals belongs beside these,
// fed by the approval store.

// limitInstruments records the gateway's resource use. Its methods
// (Sessions, InflightBodyBytes, LimitRefused) are promoted to
// otelMetrics, where package gateway finds them by interface.
type limitInstruments struct {
	refusals  metric.Int64Counter
	withheld  metric.Int64Counter
	headers   metric.Int64Counter
	stderr    metric.Int64Counter
	budget    metric.Int64Counter
	bodyBytes atomic.Int64

	mu       sync.Mutex // guards sessions
	sessions map[string]int64
}

func (l *limitInstruments) init(m metric.Meter) error {
	l.sessions = map[string]int64{}
	var errs []error
	sessions, err := m.Int64ObservableGauge(MetricSessions, metric.WithUnit("{session}"),
		metric.WithDescription("Open downstream sessions by transport."))
	errs = append(errs, err)
	body, err := m.Int64ObservableGauge(MetricRequestBodyInflight, metric.WithUnit("By"),
		metric.WithDescription("Request body bytes held by the gateway."))
	errs = append(errs, err)
	l.refusals, err = m.Int64Counter(MetricLimitRefusals, metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused by a resource limit, by the limit's config key."))
	errs = append(errs, err)
	l.withheld, err = m.Int64Counter(MetricMessagesWithheld, metric.WithUnit("{message}"),
		metric.WithDescription("Messages from upstreams not delivered to a client, by reason."))
	errs = append(errs, err)
	l.headers, err = m.Int64Counter(MetricHeadersWithheld, metric.WithUnit("{header}"),
		metric.WithDescription("Client HTTP headers not sent to an upstream a route rule closes to the client, by upstream."))
	errs = append(errs, err)
	l.stderr, err = m.Int64Counter(MetricStderrDropped, metric.WithUnit("{line}"),
		metric.WithDescription("Lines of a stdio upstream's stderr not logged (rate bound, slow log sink), by upstream."))
	errs = append(errs, err)
	l.budget, err = m.Int64Counter(MetricClassifierOverBudget, metric.WithUnit("{call}"),
		metric.WithDescription("Calls the LLM classifier did not send its provider, over its budget, by the budget's scope."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: creating limit instruments: %w", err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		obs.ObserveInt64(body, l.bodyBytes.Load())
		l.mu.Lock()
		defer l.mu.Unlock()
		for kind, n := range l.sessions {
			obs.ObserveInt64(sessions, n, metric.WithAttributes(attribute.String("transport", kind)))
		}
		return nil
	}, sessions, body)
	if err != nil {
		return fmt.Errorf("telemetry: registering limit callback: %w", err)
	}
	return nil
}

// Sessions records how many downstream sessions of a transport are open.
func (l *limitInstruments) Sessions(transport string, n int) {
	l.mu.Lock()
	l.sessions[transport] = int64(n)
	l.mu.Unlock()
}

// InflightBodyBytes records the request body bytes held now.
func (l *limitInstruments) InflightBodyBytes(n int64) { l.bodyBytes.Store(n) }

// LimitRefused counts one request refused by the named limit.
func (l *limitInstruments) LimitRefused(limit string) {
	l.refusals.Add(bg, 1, metric.WithAttributes(attribute.String("limit", limit)))
}

// HeadersWithheld counts n client headers not sent to upstream, closed
// to the client.
func (l *limitInstruments) HeadersWithheld(upstream string, n int) {
	l.headers.Add(bg, int64(n), metric.WithAttributes(attribute.String("upstream", upstream)))
}

// MessageWithheld counts one upstream message not delivered to a client,
// for reason.
func (l *limitInstruments) MessageWithheld(reason string) {
	l.withheld.Add(bg, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

// StderrDropped counts n lines of a stdio upstream's stderr not logged.
func (l *limitInstruments) StderrDropped(upstream string, n int) {
	l.stderr.Add(bg, int64(n), metric.WithAttributes(attribute.String("upstream", upstream)))
}

// ClassifierOverBudget counts one call the LLM classifier did not send
// its provider for being over the budget of scope (agent, total).
func (l *limitInstruments) ClassifierOverBudget(scope string) {
	l.budget.Add(bg, 1, metric.WithAttributes(attribute.String("scope", scope)))
}

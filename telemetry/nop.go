package telemetry

import (
	"context"
	"time"
)

// NopTelemetry is a [Tracer] and [Metrics] that records nothing. Its spans
// still carry no context of their own, so a trace context extracted with
// [ExtractMeta] passes through [InjectMeta] unchanged.
type NopTelemetry struct{}

var (
	_ Tracer  = NopTelemetry{}
	_ Metrics = NopTelemetry{}
	_ Span    = nopSpan{}
)

// Nop returns the telemetry that records nothing.
func Nop() NopTelemetry { return NopTelemetry{} }

func (NopTelemetry) Start(ctx context.Context, _ string, _ ...Attr) (context.Context, Span) {
	return ctx, nopSpan{}
}

func (NopTelemetry) Decision(string, string, time.Duration) {}
func (NopTelemetry) Classification(time.Duration)           {}
func (NopTelemetry) Upstream(string, time.Duration, error)  {}
func (NopTelemetry) BreakerState(string, string)            {}
func (NopTelemetry) MemoryStore(int, uint64)                {}
func (NopTelemetry) QueueDepth(int)                         {}
func (NopTelemetry) AuditLost(int)                          {}
func (NopTelemetry) AuditAvailable(bool)                    {}

type nopSpan struct{}

func (nopSpan) SetAttr(...Attr) {}
func (nopSpan) End(error)       {}

package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanQueueSize bounds the spans waiting for the batch processor, beyond
// the batch processor's own queue (2,048) and batch (512).
const spanQueueSize = 2048

// droppedReportEvery spaces the log lines about dropped spans.
const droppedReportEvery = 10 * time.Second

// spanQueue hands ended spans to a batch span processor through a bounded
// queue of its own, so that the spans it must drop are counted and said.
// The SDK's batch processor drops a span whenever its queue is full (a
// collector that is slow, unreachable or accepts connections and never
// answers holds its exporter for the export timeout and its retries) and
// says so only at debug level. Here the batch processor blocks instead,
// on this queue's goroutine, and a span ended while this queue is full is
// dropped and counted: a call never waits for the collector, and what is
// lost is bounded (the two queues and a batch) and counted.
type spanQueue struct {
	next sdktrace.SpanProcessor // a batch processor made WithBlocking
	log  *slog.Logger           // nil: no log lines

	q              chan sdktrace.ReadOnlySpan
	queued, handed atomic.Int64 // spans put on q; taken off it and given to next
	dropped        atomic.Int64 // spans dropped because q was full
	reported       atomic.Int64 // dropped as of the last log line
	reportedAt     atomic.Int64 // Unix nanoseconds of the last log line
	stop, done     chan struct{}
	stopOnce       sync.Once
}

var _ sdktrace.SpanProcessor = (*spanQueue)(nil)

func newSpanQueue(next sdktrace.SpanProcessor, log *slog.Logger, size int) *spanQueue {
	s := &spanQueue{next: next, log: log, q: make(chan sdktrace.ReadOnlySpan, size), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *spanQueue) run() {
	defer close(s.done)
	for {
		select {
		case sp := <-s.q:
			s.next.OnEnd(sp)
			s.handed.Add(1)
		case <-s.stop:
			for {
				select {
				case sp := <-s.q:
					s.next.OnEnd(sp)
					s.handed.Add(1)
				default:
					return
				}
			}
		}
	}
}

func (s *spanQueue) OnStart(parent context.Context, sp sdktrace.ReadWriteSpan) {
	s.next.OnStart(parent, sp)
}

func (s *spanQueue) OnEnd(sp sdktrace.ReadOnlySpan) {
	if !sp.SpanContext().IsSampled() {
		return // the batch processor exports only sampled spans
	}
	select {
	case s.q <- sp:
		s.queued.Add(1)
	default:
		s.dropped.Add(1)
		s.report()
	}
}

// report logs the spans dropped since the last line, at most once every
// droppedReportEvery.
func (s *spanQueue) report() {
	if s.log == nil {
		return
	}
	now, last := time.Now().UnixNano(), s.reportedAt.Load()
	if now-last < int64(droppedReportEvery) || !s.reportedAt.CompareAndSwap(last, now) {
		return
	}
	total := s.dropped.Load()
	s.log.Warn("telemetry: spans dropped: the trace exporter is not keeping up (its collector is slow or unreachable); calls go on",
		"dropped", total-s.reported.Swap(total), "dropped_total", total)
}

// Dropped is the number of spans dropped so far.
func (s *spanQueue) Dropped() int64 { return s.dropped.Load() }

// ForceFlush hands every span queued so far to the batch processor and
// flushes it.
func (s *spanQueue) ForceFlush(ctx context.Context) error {
	if err := s.drained(ctx); err != nil {
		return err
	}
	return s.next.ForceFlush(ctx)
}

// drained waits until the spans queued when it was called are handed on.
func (s *spanQueue) drained(ctx context.Context) error {
	want := s.queued.Load()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for s.handed.Load() < want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return nil
		case <-t.C:
		}
	}
	return nil
}

// Shutdown hands on what is queued and shuts the batch processor down.
func (s *spanQueue) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.done:
		return s.next.Shutdown(ctx)
	case <-ctx.Done():
		// run is held by the batch processor, itself held by its
		// exporter: stop the batch processor too, without waiting.
		_ = s.next.Shutdown(ctx)
		return ctx.Err()
	}
}

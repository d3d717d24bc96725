package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSpansDroppedCounted: a collector that accepts the exporter's
// requests and never answers holds the batch processor's export; the
// spans ended meanwhile must not hold the calls ending them, and those
// that cannot be kept are counted (sluice.telemetry.spans_dropped) and
// said in the log. Before, the SDK's batch processor dropped them and
// said so only at debug level.
func TestSpansDroppedCounted(t *testing.T) {
	release := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	var logs lockedBuffer
	ctx := context.Background()
	p, err := New(ctx, Config{Traces: ExporterOTLPHTTP, Endpoint: collector.URL, Prometheus: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("shutdown once the collector answers: %v", err)
		}
	}()

	const spans = 10_000
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for range spans {
			_, s := p.Tracer().Start(ctx, "tools/call echo")
			s.End(nil)
		}
	}()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("ending spans waited for a collector that never answers")
	}

	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	line := findLine(rec.Body.String(), "sluice_telemetry_spans_dropped_total")
	i := strings.LastIndexByte(line, ' ')
	dropped, err := strconv.Atoi(line[i+1:])
	if line == "" || err != nil {
		t.Fatalf("metrics: no sluice_telemetry_spans_dropped_total (line %q)", line)
	}
	// Kept at most: this queue, its goroutine's span, the batch
	// processor's queue and the batch being exported.
	if kept := spans - dropped; dropped > spans || kept > spanQueueSize+1+2048+512 {
		t.Errorf("spans dropped: got %d of %d (%d kept), want all but at most %d", dropped, spans, kept, spanQueueSize+1+2048+512)
	}
	if !strings.Contains(logs.String(), "spans dropped") || !strings.Contains(logs.String(), "dropped_total=") {
		t.Errorf("log: got %q, want a line saying spans are dropped", logs.String())
	}
}

// TestSpansQueuedReachExporter: every span ended is exported on
// Shutdown or counted as dropped (here only when the machine is so busy
// that this queue's goroutine falls 2,048 spans behind); before, the SDK's
// batch processor dropped spans ended faster than it exported, uncounted.
func TestSpansQueuedReachExporter(t *testing.T) {
	var out lockedBuffer
	ctx := context.Background()
	p, err := New(ctx, Config{Traces: ExporterStdout, Stdout: &out, Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	const spans = 3000 // more than one batch and more than the batch processor's queue
	for i := range spans {
		_, s := p.Tracer().Start(ctx, "span-"+strconv.Itoa(i))
		s.End(nil)
	}
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	line := findLine(rec.Body.String(), "sluice_telemetry_spans_dropped_total")
	dropped, err := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
	if line == "" || err != nil {
		t.Fatalf("metrics: no sluice_telemetry_spans_dropped_total (line %q)", line)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), `"Name":"span-`); got+dropped != spans || got < spans/2 {
		t.Errorf("spans exported: got %d and %d counted dropped, want all %d of them one or the other, most exported", got, dropped, spans)
	}
}

package classifier

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/intercept"
)

// BenchmarkLLMCacheHit is Classify for a call seen before, with a new
// session (so session_id, classifier_id and classified_at are refreshed).
func BenchmarkLLMCacheHit(b *testing.B) {
	f := newFakeLLM(b, ProviderOpenAI)
	_, o := f.serve()
	l := mustLLM(b, o)
	ctx := context.Background()
	if _, err := l.Classify(ctx, llmDescriptor("warm")); err != nil {
		b.Fatal(err)
	}
	d := llmDescriptor("s")
	b.ReportAllocs()
	cpu := llmCPUTime()
	for b.Loop() {
		if _, err := l.Classify(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	llmReportCPU(b, cpu)
	if n := f.calls.Load(); n != 1 {
		b.Fatalf("got %d provider calls, want 1", n)
	}
}

// BenchmarkLLMCacheHitParallel is the same from both cores at once.
func BenchmarkLLMCacheHitParallel(b *testing.B) {
	f := newFakeLLM(b, ProviderOpenAI)
	_, o := f.serve()
	l := mustLLM(b, o)
	ctx := context.Background()
	if _, err := l.Classify(ctx, llmDescriptor("warm")); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := llmDescriptor("s")
		for pb.Next() {
			if _, err := l.Classify(ctx, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLLMBreakerOpen is the whole cost of Classify with the provider
// down and the breaker open: what an outage adds to a call. Descriptors
// vary, so none is a cache hit. It reports the p99 of single calls.
func BenchmarkLLMBreakerOpen(b *testing.B) {
	o := LLMOptions{Provider: ProviderOpenAI, BaseURL: llmClosedURL(b), BreakerFailures: 1}
	l := mustLLM(b, o)
	ctx := context.Background()
	if _, err := l.Classify(ctx, llmDescriptor("trip")); err == nil {
		b.Fatal("got no error from a closed port")
	}
	if l.BreakerState() != gobreaker.StateOpen {
		b.Fatal("breaker not open")
	}
	ds := make([]*intercept.ActionDescriptor, 64)
	for i := range ds {
		ds[i] = llmDescriptor("s")
		ds[i].ToolName = "tool_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	lat := make([]time.Duration, 0, 1<<20)
	b.ReportAllocs()
	i := 0
	cpu := llmCPUTime()
	for b.Loop() {
		start := time.Now()
		v, _ := l.Classify(ctx, ds[i%len(ds)])
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
		if v.CompositeConfidence != 0 {
			b.Fatal("got a confident verdict with the provider down")
		}
		i++
	}
	llmReportCPU(b, cpu)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
}

// BenchmarkLLMInactive is Classify after a failed Probe.
func BenchmarkLLMInactive(b *testing.B) {
	l := mustLLM(b, LLMOptions{Provider: ProviderAnthropic, BaseURL: llmClosedURL(b)})
	ctx := context.Background()
	if err := l.Probe(ctx); err == nil {
		b.Fatal("probe of a closed port succeeded")
	}
	d := llmDescriptor("s")
	b.ReportAllocs()
	cpu := llmCPUTime()
	for b.Loop() {
		if v, _ := l.Classify(ctx, d); v.CompositeConfidence != 0 {
			b.Fatal("got a confident verdict while inactive")
		}
	}
	llmReportCPU(b, cpu)
}

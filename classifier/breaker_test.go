package classifier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sony/gobreaker/v2"
)

// breakerTrace records OnBreakerStateChange calls.
type breakerTrace struct {
	mu  sync.Mutex // guards got
	got []string
}

func (b *breakerTrace) record(from, to gobreaker.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, from.String()+" → "+to.String())
}

func (b *breakerTrace) transitions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.got)
}

// TestBreakerOpenHalfOpenClosed runs in a synctest bubble: gobreaker's
// clock is the bubble's, so the open period passes at once and exactly.
func TestBreakerOpenHalfOpenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLLM(t, ProviderAnthropic)
		f.setMode(llm5xx)
		var trace breakerTrace
		o := f.inMemory()
		o.BreakerFailures = 3
		o.BreakerTimeout = 10 * time.Second
		o.OnBreakerStateChange = trace.record
		l := mustLLM(t, o)
		ctx := context.Background()
		d := llmDescriptor("s")

		for i := range 3 {
			if l.BreakerState() != gobreaker.StateClosed {
				t.Fatalf("after %d failures: got %v, want closed", i, l.BreakerState())
			}
			if _, err := l.Classify(ctx, d); err == nil {
				t.Fatal("got no error from a 503")
			}
		}
		if got := l.BreakerState(); got != gobreaker.StateOpen {
			t.Fatalf("after 3 failures: got %v, want open", got)
		}

		// Open: no request at all, the fallback verdict at once.
		calls := f.calls.Load()
		start := time.Now()
		v, err := l.Classify(ctx, d)
		if !errors.Is(err, gobreaker.ErrOpenState) {
			t.Errorf("got %v, want ErrOpenState", err)
		}
		llmCheckFallback(t, v, AxisActionType, AxisBoundary)
		if f.calls.Load() != calls || time.Since(start) != 0 {
			t.Errorf("open breaker sent a request or waited")
		}

		time.Sleep(10*time.Second - time.Nanosecond)
		if got := l.BreakerState(); got != gobreaker.StateOpen {
			t.Fatalf("before the breaker timeout: got %v, want open", got)
		}
		time.Sleep(time.Nanosecond + 1)
		if got := l.BreakerState(); got != gobreaker.StateHalfOpen {
			t.Fatalf("after the breaker timeout: got %v, want half-open", got)
		}

		f.setMode(llmGood)
		if _, err := l.Classify(ctx, d); err != nil {
			t.Fatalf("half-open probe: got %v, want success", err)
		}
		if got := l.BreakerState(); got != gobreaker.StateClosed {
			t.Errorf("after a good probe: got %v, want closed", got)
		}
		want := []string{"closed → open", "open → half-open", "half-open → closed"}
		if got := trace.transitions(); !slices.Equal(got, want) {
			t.Errorf("got transitions %q, want %q", got, want)
		}
	})
}

// TestBreakerHalfOpen: one probe at a time; others get the fallback at
// once; a failed (timed-out) probe opens the breaker again.
func TestBreakerHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLLM(t, ProviderGemini)
		f.setMode(llm5xx)
		o := f.inMemory()
		o.BreakerFailures = 1
		o.BreakerTimeout = time.Second
		o.Timeout = 2 * time.Second
		l := mustLLM(t, o)
		ctx := context.Background()

		_, _ = l.Classify(ctx, llmDescriptor("s"))
		time.Sleep(time.Second + 1)
		if got := l.BreakerState(); got != gobreaker.StateHalfOpen {
			t.Fatalf("got %v, want half-open", got)
		}

		f.setMode(llmSlow)
		done := make(chan error)
		go func() {
			_, err := l.Classify(ctx, llmDescriptor("probe"))
			done <- err
		}()
		synctest.Wait() // the probe is in flight

		start := time.Now()
		v, err := l.Classify(ctx, llmDescriptor("other"))
		if !errors.Is(err, gobreaker.ErrTooManyRequests) || time.Since(start) != 0 {
			t.Errorf("second call while probing: got %v after %v, want ErrTooManyRequests at once", err, time.Since(start))
		}
		llmCheckFallback(t, v, AxisActionType, AxisBoundary)

		if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("probe: got %v, want a timeout", err)
		}
		if got := l.BreakerState(); got != gobreaker.StateOpen {
			t.Errorf("after a failed probe: got %v, want open", got)
		}
	})
}

// TestBreakerRealServer is the same cycle over sockets, with a short
// breaker timeout and a bounded poll.
func TestBreakerRealServer(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	f.setMode(llm5xx)
	_, o := f.serve()
	o.BreakerFailures = 2
	o.BreakerTimeout = 50 * time.Millisecond
	var trace breakerTrace
	o.OnBreakerStateChange = trace.record
	l := mustLLM(t, o)
	ctx := context.Background()
	for range 2 {
		_, _ = l.Classify(ctx, llmDescriptor("s"))
	}
	if got := l.BreakerState(); got != gobreaker.StateOpen {
		t.Fatalf("got %v, want open", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.BreakerState() != gobreaker.StateHalfOpen {
		if time.Now().After(deadline) {
			t.Fatal("breaker did not become half-open within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.setMode(llmGood)
	if _, err := l.Classify(ctx, llmDescriptor("s")); err != nil {
		t.Fatalf("got %v, want success", err)
	}
	want := []string{"closed → open", "open → half-open", "half-open → closed"}
	if got := trace.transitions(); !slices.Equal(got, want) {
		t.Errorf("got transitions %q, want %q", got, want)
	}
}

// TestBreakerCounts: what is and is not the provider's failure.
func TestBreakerCounts(t *testing.T) {
	cases := []struct {
		name     string
		mode     fakeLLMMode
		cancel   bool
		wantOpen bool
	}{
		{name: "invalid reply is the model's fault", mode: llmMalformed},
		{name: "schema-invalid reply is the model's fault", mode: llmInvalidValue},
		{name: "caller gone is nobody's fault", mode: llmSlow, cancel: true},
		{name: "5xx", mode: llm5xx, wantOpen: true},
		{name: "wrong wire format", mode: llmEnvelope, wantOpen: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLLM(t, ProviderOpenAI)
				f.setMode(tc.mode)
				o := f.inMemory()
				o.BreakerFailures = 1
				l := mustLLM(t, o)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					go func() { synctest.Wait(); cancel() }()
				}
				if _, err := l.Classify(ctx, llmDescriptor("s")); err == nil {
					t.Fatal("got no error")
				}
				if open := l.BreakerState() == gobreaker.StateOpen; open != tc.wantOpen {
					t.Errorf("got open %v, want %v", open, tc.wantOpen)
				}
			})
		})
	}
}

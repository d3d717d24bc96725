package classifier

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rateLimited answers completions with 429 and Retry-After while on is
// set, as a hosted provider does when the operator's account is over its
// rate, and counts the requests it got.
type rateLimited struct {
	f     *fakeLLM
	after string
	on    atomic.Bool
	hits  atomic.Int32
}

func (h *rateLimited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		h.hits.Add(1)
		if h.on.Load() {
			w.Header().Set("Retry-After", h.after)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`))
			return
		}
	}
	h.f.ServeHTTP(w, r)
}

// TestLLMHonoursRetryAfter (left open by attack88): a provider's 429 with
// Retry-After was taken as any failure, and every call went on sending
// requests into the account's rate limit (each waiting out a refusal)
// until five opened the breaker for its fixed 30 s. A provider that asks
// to wait is not called before the time it names, at most five minutes
// on: the calls meanwhile get the fallback verdict (escalated, as an
// open breaker's), with an error saying why.
func TestLLMHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		after string
		wait  time.Duration // how long requests are held back
	}{
		{"20", 20 * time.Second},
		{"86400", llmMaxWait}, // a day, bounded
	} {
		t.Run(tc.after, func(t *testing.T) {
			f := newFakeLLM(t, ProviderAnthropic)
			h := &rateLimited{f: f, after: tc.after}
			h.on.Store(true)
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			clock := time.Unix(1_800_000_000, 0)
			l := mustLLM(t, LLMOptions{Provider: ProviderAnthropic, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr},
				Now: func() time.Time { return clock }})
			if _, err := l.Classify(context.Background(), llmDescriptor("s1")); err == nil || !strings.Contains(err.Error(), "429") {
				t.Fatalf("first call: err %v, want the provider's 429", err)
			}
			h.on.Store(false)
			for i, s := range []string{"s2", "s3", "s4"} {
				v, err := l.Classify(context.Background(), llmDescriptor(s))
				if err == nil || !strings.Contains(err.Error(), "Retry-After") || v.Axes.Get(AxisActionType).Source != SourceLLMFallback {
					t.Errorf("call %d while the provider asked to wait: %v (source %s), want the fallback saying Retry-After", i+2, err, v.Axes.Get(AxisActionType).Source)
				}
			}
			if n := h.hits.Load(); n != 1 {
				t.Errorf("the provider got %d requests, want the first only", n)
			}
			clock = clock.Add(tc.wait + time.Second)
			if v, err := l.Classify(context.Background(), llmDescriptor("s5")); err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
				t.Errorf("a call after the wait: err %v, want classified", err)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, time.Minute},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"1e300"}}, math.MaxInt64},
		{http.Header{"Retry-After": {"NaN"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// TestLLMProbeHonoursRetryAfter (left open by review101): a probe the
// provider answered 429 with Retry-After turned the classifier off until
// a later probe passed, as for a provider down or a wrong key; it is up,
// over the account's rate: the classifier stays on and keeps requests
// from it until the time it names.
func TestLLMProbeHonoursRetryAfter(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	h := &rateLimitedProbe{f: f}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	clock := time.Unix(1_800_000_000, 0)
	l := mustLLM(t, LLMOptions{Provider: ProviderOpenAI, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr},
		Now: func() time.Time { return clock }})
	if err := l.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "Retry-After") {
		t.Fatalf("probe answered 429: %v, want an error saying Retry-After", err)
	}
	if _, err := l.Classify(context.Background(), llmDescriptor("s1")); err == nil || errors.Is(err, ErrInactive) || !strings.Contains(err.Error(), "Retry-After") {
		t.Errorf("a call during the wait: %v, want the fallback for Retry-After, not inactive", err)
	}
	clock = clock.Add(31 * time.Second)
	if v, err := l.Classify(context.Background(), llmDescriptor("s2")); err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
		t.Errorf("a call after the wait, with no probe since: %v, want it classified", err)
	}
}

// rateLimitedProbe answers the probe 429 with Retry-After: 30.
type rateLimitedProbe struct{ f *fakeLLM }

func (h *rateLimitedProbe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	h.f.ServeHTTP(w, r)
}

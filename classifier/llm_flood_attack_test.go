package classifier

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// busyProvider is a provider with room for capacity requests at a time:
// beyond it, it answers as OpenAI does when a key's rate limit is hit (429,
// Retry-After). Requests whose body holds hold wait until release closes.
type busyProvider struct {
	f        *fakeLLM
	capacity int32
	hold     []byte
	release  chan struct{}
	inflight atomic.Int32
}

func (p *busyProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		p.f.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if n := p.inflight.Add(1); n > p.capacity {
		p.inflight.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 500. Please try again in 120ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return
	}
	defer p.inflight.Add(-1)
	if bytes.Contains(body, p.hold) {
		<-p.release
	}
	p.f.ServeHTTP(w, r)
}

// (Found by an attacker review.) TestAttackOneAgentFloodsProvider: the
// provider's rate limit is the gateway's key's, shared by every agent. One
// agent's 40 calls at once (distinct arguments: no cache hits) each sent a
// request, the provider refused those past its limit, the refusals opened
// the breaker, and every other agent's calls got the fallback verdict.
// An agent now has at most llmMaxPerAgent classifications in flight; its
// calls past them get the fallback verdict without a request.
func TestAttackOneAgentFloodsProvider(t *testing.T) {
	t.Run("authenticated", func(t *testing.T) {
		testFlood(t, func(i int) (context.Context, *intercept.ActionDescriptor) {
			d := llmDescriptor("mallory-session")
			d.Agent = "mallory"
			d.Principal = &intercept.Principal{ID: "mallory", Method: "api_key"}
			return context.Background(), d
		}, `the agent "mallory" has`)
	})
	// Without authentication an agent is the name its client gives, a new
	// one at each call if it likes; its address it cannot change.
	t.Run("unauthenticated, a new name at each call", func(t *testing.T) {
		testFlood(t, func(i int) (context.Context, *intercept.ActionDescriptor) {
			d := llmDescriptor("mallory-session")
			d.Agent = fmt.Sprintf("mallory-%d", i)
			return intercept.WithClientAddr(context.Background(), "203.0.113.7"), d
		}, "the unauthenticated agents at 203.0.113.7 have")
	})
}

// testFlood sends 40 calls of mallory's at once, each made by call, then
// one of alice's (another address) and, once mallory's are answered, one
// more of mallory's. The calls refused for the cap say whose it is:
// refused.
func testFlood(t *testing.T, call func(i int) (context.Context, *intercept.ActionDescriptor), refused string) {
	f := newFakeLLM(t, ProviderOpenAI)
	p := &busyProvider{f: f, capacity: llmMaxPerAgent + 2, hold: []byte("mallory"), release: make(chan struct{})}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	l := mustLLM(t, LLMOptions{Provider: ProviderOpenAI, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr},
		Timeout: time.Minute, CacheSize: -1})

	const flood = 40
	var returned, capped atomic.Int32
	var wg sync.WaitGroup
	released := sync.OnceFunc(func() { close(p.release) })
	t.Cleanup(func() { released(); wg.Wait() })
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer returned.Add(1)
			ctx, d := call(i)
			d.Parameters = jsontext.Value(fmt.Sprintf(`{"invoice_id":"INV-%d"}`, i))
			if _, err := l.Classify(ctx, d); err != nil && strings.Contains(err.Error(), "calls at the provider") {
				capped.Add(1)
				if !strings.Contains(err.Error(), refused) {
					t.Errorf("a call refused for the cap: %v, want it to say %q", err, refused)
				}
			}
		}()
	}
	// Every call of mallory's has either returned or is at the provider.
	for deadline := time.Now().Add(10 * time.Second); returned.Load()+p.inflight.Load() < flood; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d returned, %d at the provider", returned.Load(), p.inflight.Load())
		}
	}
	if n := p.inflight.Load(); n > llmMaxPerAgent {
		t.Errorf("one agent has %d requests at the provider at once, want at most %d", n, llmMaxPerAgent)
	}
	if capped.Load() == 0 {
		t.Error("no call was refused for the cap")
	}
	d := llmDescriptor("alice-session")
	v, err := l.Classify(intercept.WithClientAddr(context.Background(), "198.51.100.2"), d)
	if err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
		t.Errorf("alice's call: got the fallback verdict (breaker %v), err %v", l.BreakerState(), err)
	}
	released()
	wg.Wait()
	// Mallory's calls in flight answered; a call after them is sent.
	ctx, d := call(flood)
	if v, err := l.Classify(ctx, d); err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
		t.Errorf("mallory's call once the others are done: got the fallback verdict, err %v", err)
	}
}

// TestLLMAgentCapFreedWhenCallsGiveUp: an agent's requests at the provider
// are uncounted however they end. Eight calls held at the provider that
// their callers give up (a client gone), or that run past the timeout,
// leave no count behind: the agent's next call is sent, not refused as
// one past its llmMaxPerAgent (found sound by review91; a count left
// behind would cap the agent for good).
func TestLLMAgentCapFreedWhenCallsGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
	}{
		{"callers gone", time.Minute, true},
		{"past the timeout", 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLLM(t, ProviderOpenAI)
			p := &busyProvider{f: f, capacity: 100, hold: []byte("INV-held"), release: make(chan struct{})}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			t.Cleanup(sync.OnceFunc(func() { close(p.release) }))
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			l := mustLLM(t, LLMOptions{Provider: ProviderOpenAI, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr},
				Timeout: tc.timeout, CacheSize: -1, BreakerFailures: 100})
			call := func(ctx context.Context, args string) error {
				d := llmDescriptor("mallory-session")
				d.Agent = "mallory"
				d.Principal = &intercept.Principal{ID: "mallory", Method: "api_key"}
				d.Parameters = jsontext.Value(args)
				_, err := l.Classify(ctx, d)
				return err
			}
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for i := range llmMaxPerAgent {
				wg.Go(func() { _ = call(ctx, fmt.Sprintf(`{"invoice_id":"INV-held-%d"}`, i)) })
			}
			for deadline := time.Now().Add(10 * time.Second); tc.cancel && p.inflight.Load() < llmMaxPerAgent; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s: %d requests at the provider, want %d", p.inflight.Load(), llmMaxPerAgent)
				}
			}
			if tc.cancel {
				cancel()
			}
			wg.Wait()
			cancel()
			if err := call(t.Context(), `{"invoice_id":"INV-next"}`); err != nil {
				t.Errorf("mallory's call after its %d gave up: %v, want it sent and answered", llmMaxPerAgent, err)
			}
		})
	}
}

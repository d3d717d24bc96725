package classifier

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sony/gobreaker/v2"
)

// smallContext is a local model server with a 4,096-token context, as
// llama.cpp's server runs by default: a request past it is refused with
// 400 and llama.cpp's error object.
type smallContext struct {
	f     *fakeLLM
	limit int64
}

func (c smallContext) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.ContentLength > c.limit {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9120,"n_ctx":4096}}`)
		return
	}
	c.f.ServeHTTP(w, r)
}

// (Found by an attacker review.) TestAttackBadRequestsOpenBreakerForAll: a
// 400 says the request was wrong, not that the provider is down. The
// descriptor bound (64 KiB) fits a hosted model's context, not a local
// server's: five calls of one agent's with 30 KB of arguments, each
// refused for its size, opened the breaker every agent's calls share.
func TestAttackBadRequestsOpenBreakerForAll(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	srv := httptest.NewServer(smallContext{f: f, limit: 16 << 10})
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	l := mustLLM(t, LLMOptions{Provider: ProviderOpenAI, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr}})
	for i := range 6 {
		d := llmDescriptor("mallory-session")
		d.Agent = "mallory"
		d.Parameters = jsontext.Value(fmt.Sprintf(`{"note":"%d %s"}`, i, strings.Repeat("lorem ipsum ", 2500)))
		v, err := l.Classify(context.Background(), d)
		if err == nil || v.Axes.Get(AxisActionType).Source != SourceLLMFallback {
			t.Fatalf("mallory's call %d, past the model's context: classified, err %v", i, err)
		}
	}
	if st := l.BreakerState(); st != gobreaker.StateClosed {
		t.Errorf("one agent's oversized calls: breaker %v", st)
	}
	v, err := l.Classify(context.Background(), llmDescriptor("alice-session"))
	if err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
		t.Errorf("alice's ordinary call: got the fallback verdict, err %v", err)
	}
}

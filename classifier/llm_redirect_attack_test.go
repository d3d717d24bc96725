package classifier

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// (Found by an attacker review.) TestAttackRedirectCarriesKey: a provider,
// or anything on its path (a corporate LLM proxy, a compromised endpoint),
// that answers 307 must not get the gateway to send the API key and the
// call's descriptor to another origin. http.Client follows redirects by
// default and strips only Authorization and Cookie, and those only for a
// different host name: Anthropic's x-api-key and Gemini's x-goog-api-key
// go anywhere, OpenAI's bearer to another port or from https to http.
func TestAttackRedirectCarriesKey(t *testing.T) {
	for _, p := range llmProviders {
		t.Run(string(p), func(t *testing.T) {
			var got, keyed atomic.Int32
			evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
					if v := r.Header.Get(h); v != "" && v != "Bearer " {
						keyed.Add(1)
					}
				}
				http.Error(w, "thanks", http.StatusTeapot)
			}))
			t.Cleanup(evil.Close)
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Another host name for the same listener: another origin.
				to := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
				http.Redirect(w, r, to+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(redirect.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			l := mustLLM(t, LLMOptions{Provider: p, BaseURL: redirect.URL, APIKey: llmTestKey, HTTPClient: &http.Client{Transport: tr}})

			v, err := l.Classify(context.Background(), llmDescriptor("s"))
			if err == nil || v.CompositeConfidence != 0 {
				t.Errorf("redirected classification: got composite %.2f, err %v; want the fallback verdict and an error", v.CompositeConfidence, err)
			}
			_ = l.Probe(context.Background())
			if n := got.Load(); n != 0 {
				t.Errorf("the redirect's target got %d request(s), %d with the API key; want none", n, keyed.Load())
			}
		})
	}
}

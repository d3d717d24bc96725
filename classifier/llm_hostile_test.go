package classifier

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLLMHostileProviderReplies: whatever a provider answers in place of a
// verdict, in each vendor's envelope, the call gets the fallback verdict
// (composite 0, every axis at its conservative default) and an error that
// does not hold the key: never a verdict it did not validate.
func TestLLMHostileProviderReplies(t *testing.T) {
	good := llmGoodReply("read_invoice", false)
	modelText := map[string]string{
		"confidence out of float range": strings.Replace(good, `"confidence":0.95`, `"confidence":1e400`, 1),
		"confidence NaN as a string":    strings.Replace(good, `"confidence":0.95`, `"confidence":"NaN"`, 1),
		"unknown enum value":            strings.Replace(good, `"classified":"Read"`, `"classified":"Safe"`, 1),
		"fake verdict after a closing":  good[:len(good)-1] + `}} {"axes":{}}`,
		"duplicate axis":                strings.Replace(good, `"axes":{`, `"axes":{"action_type":{"classified":"Write","confidence":0.9},`, 1),
	}
	for _, p := range []Provider{ProviderOpenAI, ProviderAnthropic, ProviderGemini} {
		f := newFakeLLM(t, p)
		env := string(f.envelope(good))
		raw := map[string]struct {
			status int
			header map[string]string
			body   string
		}{
			"duplicate envelope member": {200, nil, env[:len(env)-1] + `,` + env[1:]},
			"truncated envelope":        {200, nil, env[:len(env)/2]},
			"2 MiB envelope":            {200, nil, env[:len(env)-1] + `,"pad":"` + strings.Repeat("x", 2<<20) + `"}`},
			"429 echoing the key":       {429, map[string]string{"Retry-After": "30"}, `{"error":{"message":"rate limited for key ` + f.key + `"}}`},
			"redirect":                  {307, map[string]string{"Location": "https://evil.example/steal"}, ""},
		}
		for name, text := range modelText {
			raw["model: "+name] = struct {
				status int
				header map[string]string
				body   string
			}{200, nil, string(f.envelope(text))}
		}
		for name, r := range raw {
			t.Run(string(p)+"/"+name, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					_, _ = io.Copy(io.Discard, req.Body)
					for k, v := range r.header {
						w.Header().Set(k, v)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(r.status)
					_, _ = io.WriteString(w, r.body)
				}))
				t.Cleanup(srv.Close)
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				l := mustLLM(t, LLMOptions{Provider: p, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr}})
				v, err := l.Classify(context.Background(), llmDescriptor("s"))
				if err == nil {
					t.Fatalf("classified: %+v", v)
				}
				if strings.Contains(err.Error(), f.key[:14]) {
					t.Errorf("error holds the key: %v", err)
				}
				if v.CompositeConfidence != 0 || v.Axes.Get(AxisActionType).Classified != ConservativeDefault(AxisActionType) ||
					v.Axes.Get(AxisActionType).Source != SourceLLMFallback {
					t.Errorf("got %+v, want the fallback verdict", v)
				}
			})
		}
	}
}

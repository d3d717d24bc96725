package classifier

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/deadpeer"
)

// fakeLLMMode is what a fakeLLM does with the next completion request.
type fakeLLMMode int32

const (
	llmGood         fakeLLMMode = iota // a valid verdict
	llmMalformed                       // model text that is not JSON
	llmInvalidValue                    // JSON with a value outside §5.1
	llmSlow                            // no answer until the client gives up
	llm5xx                             // 503 whose body echoes the API key
	llmEnvelope                        // 200 that is not the provider's format
	llmStallBody                       // 200, half the answer, then nothing until the client gives up
)

// llmTestKey is long and unusual so a leak is easy to spot.
const llmTestKey = "sk-test-5f1c0ffee0ddba11-do-not-leak"

// fakeLLM is a provider speaking one vendor's real wire format. It checks
// every request against that format and answers per its mode.
type fakeLLM struct {
	t        testing.TB
	provider Provider
	key      string
	model    string
	mode     atomic.Int32
	text     atomic.Pointer[string] // overrides the good reply's text
	calls    atomic.Int32           // completion requests
	probes   atomic.Int32
	lastUser atomic.Pointer[string]
	lastSys  atomic.Pointer[string]
}

func newFakeLLM(t testing.TB, p Provider) *fakeLLM {
	return &fakeLLM{t: t, provider: p, key: llmTestKey, model: providerDefaults[p].model}
}

func (f *fakeLLM) setMode(m fakeLLMMode) { f.mode.Store(int32(m)) }

// serve starts an httptest server; the LLM options point at it.
func (f *fakeLLM) serve() (*httptest.Server, LLMOptions) {
	srv := httptest.NewServer(f)
	f.t.Cleanup(srv.Close)
	tr := &http.Transport{}
	f.t.Cleanup(tr.CloseIdleConnections)
	return srv, LLMOptions{
		Provider:   f.provider,
		BaseURL:    srv.URL,
		APIKey:     f.key,
		HTTPClient: &http.Client{Transport: tr},
	}
}

// inMemory returns options whose client calls f directly, with no
// sockets, for tests inside a synctest bubble.
func (f *fakeLLM) inMemory() LLMOptions {
	return LLMOptions{
		Provider:   f.provider,
		BaseURL:    "http://127.0.0.1:1",
		APIKey:     f.key,
		HTTPClient: &http.Client{Transport: llmHandlerTransport{f}},
	}
}

type llmHandlerTransport struct{ h http.Handler }

func (t llmHandlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

func (f *fakeLLM) fail(w http.ResponseWriter, format string, args ...any) {
	f.t.Errorf("fake %s: "+format, append([]any{f.provider}, args...)...)
	http.Error(w, "bad request", http.StatusBadRequest)
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		f.serveProbe(w, r)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		f.fail(w, "got %s with Content-Type %q, want POST application/json", r.Method, r.Header.Get("Content-Type"))
		return
	}
	body, _ := io.ReadAll(r.Body)
	var sys, user string
	var ok bool
	switch f.provider {
	case ProviderOpenAI:
		sys, user, ok = f.checkOpenAI(w, r, body)
	case ProviderAnthropic:
		sys, user, ok = f.checkAnthropic(w, r, body)
	case ProviderGemini:
		sys, user, ok = f.checkGemini(w, r, body)
	}
	if !ok {
		return
	}
	f.calls.Add(1)
	f.lastSys.Store(&sys)
	f.lastUser.Store(&user)

	var d intercept.ActionDescriptor
	if err := json.Unmarshal([]byte(user), &d); err != nil {
		f.fail(w, "user message is not a descriptor: %v", err)
		return
	}
	text := llmGoodReply(d.ToolName, strings.Contains(sys, "reversibility —"))
	if p := f.text.Load(); p != nil {
		text = *p
	}
	switch fakeLLMMode(f.mode.Load()) {
	case llmMalformed:
		text = `{"axes": {"action_type": {"classified": "Read", ` // cut off
	case llmInvalidValue:
		text = strings.Replace(text, `"classified":"Read"`, `"classified":"Delete"`, 1)
	case llmSlow:
		<-r.Context().Done()
		return
	case llm5xx:
		http.Error(w, `{"error":{"message":"overloaded, key `+f.key+` rejected"}}`, http.StatusServiceUnavailable)
		return
	case llmStallBody:
		env := f.envelope(text)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(env[:len(env)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case llmEnvelope:
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>captive portal</html>")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(f.envelope(text))
}

func (f *fakeLLM) checkOpenAI(w http.ResponseWriter, r *http.Request, body []byte) (sys, user string, ok bool) {
	if r.URL.Path != "/v1/chat/completions" {
		f.fail(w, "path %q, want /v1/chat/completions", r.URL.Path)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+f.key {
		f.fail(w, "Authorization header wrong")
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type string `json:"type"`
		} `json:"response_format"`
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(body, &req, json.RejectUnknownMembers(true)); err != nil {
		f.fail(w, "body: %v", err)
		return
	}
	if req.Model != f.model || len(req.Messages) != 2 || req.Messages[0].Role != "system" ||
		req.Messages[1].Role != "user" || req.ResponseFormat.Type != "json_object" || req.Temperature == nil {
		f.fail(w, "body %s is not a chat completion request for %s with system+user and json_object", body, f.model)
		return
	}
	return req.Messages[0].Content, req.Messages[1].Content, true
}

func (f *fakeLLM) checkAnthropic(w http.ResponseWriter, r *http.Request, body []byte) (sys, user string, ok bool) {
	if r.URL.Path != "/v1/messages" {
		f.fail(w, "path %q, want /v1/messages", r.URL.Path)
		return
	}
	if r.Header.Get("x-api-key") != f.key || r.Header.Get("anthropic-version") != "2023-06-01" {
		f.fail(w, "x-api-key or anthropic-version header wrong")
		return
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    string `json:"system"`
		Messages  []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(body, &req, json.RejectUnknownMembers(true)); err != nil {
		f.fail(w, "body: %v", err)
		return
	}
	if req.Model != f.model || req.MaxTokens <= 0 || req.System == "" || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		f.fail(w, "body %s is not a Messages request for %s with system, max_tokens and one user message", body, f.model)
		return
	}
	return req.System, req.Messages[0].Content, true
}

func (f *fakeLLM) checkGemini(w http.ResponseWriter, r *http.Request, body []byte) (sys, user string, ok bool) {
	if want := "/v1beta/models/" + f.model + ":generateContent"; r.URL.Path != want {
		f.fail(w, "path %q, want %q", r.URL.Path, want)
		return
	}
	if r.Header.Get("x-goog-api-key") != f.key || r.URL.RawQuery != "" {
		f.fail(w, "x-goog-api-key header wrong or query %q present", r.URL.RawQuery)
		return
	}
	type part struct {
		Text string `json:"text"`
	}
	var req struct {
		SystemInstruction struct {
			Parts []part `json:"parts"`
		} `json:"systemInstruction"`
		Contents []struct {
			Role  string `json:"role"`
			Parts []part `json:"parts"`
		} `json:"contents"`
		GenerationConfig struct {
			ResponseMIMEType string   `json:"responseMimeType"`
			Temperature      *float64 `json:"temperature"`
			MaxOutputTokens  int      `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req, json.RejectUnknownMembers(true)); err != nil {
		f.fail(w, "body: %v", err)
		return
	}
	if len(req.SystemInstruction.Parts) != 1 || len(req.Contents) != 1 || req.Contents[0].Role != "user" ||
		len(req.Contents[0].Parts) != 1 || req.GenerationConfig.ResponseMIMEType != "application/json" {
		f.fail(w, "body %s is not a generateContent request with systemInstruction, one user content and JSON output", body)
		return
	}
	return req.SystemInstruction.Parts[0].Text, req.Contents[0].Parts[0].Text, true
}

// envelope wraps the model's text the way the vendor does.
func (f *fakeLLM) envelope(text string) []byte {
	var v any
	switch f.provider {
	case ProviderOpenAI:
		v = map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": f.model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": text, "refusal": nil},
				"finish_reason": "stop",
			}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020},
		}
	case ProviderAnthropic:
		v = map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": f.model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 900, "output_tokens": 120},
		}
	case ProviderGemini:
		v = map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"parts": []any{map[string]any{"text": text}}, "role": "model"},
				"finishReason": "STOP", "index": 0,
			}},
			"usageMetadata": map[string]any{"promptTokenCount": 900, "candidatesTokenCount": 120, "totalTokenCount": 1020},
			"modelVersion":  f.model,
		}
	}
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fakeLLM) serveProbe(w http.ResponseWriter, r *http.Request) {
	f.probes.Add(1)
	want, auth := "/v1/models", r.Header.Get("Authorization") == "Bearer "+f.key
	switch f.provider {
	case ProviderAnthropic:
		auth = r.Header.Get("x-api-key") == f.key && r.Header.Get("anthropic-version") == anthropicVersion
	case ProviderGemini:
		want, auth = "/v1beta/models/"+f.model, r.Header.Get("x-goog-api-key") == f.key
	}
	if r.URL.Path != want || !auth {
		f.fail(w, "probe GET %s (auth ok %v), want GET %s with the key", r.URL.Path, auth, want)
		return
	}
	if fakeLLMMode(f.mode.Load()) == llm5xx {
		http.Error(w, "down, key "+f.key, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"data":[{"id":"`+f.model+`"}]}`)
}

// llmGoodReply is a valid verdict for the Default or Extended profile.
func llmGoodReply(tool string, extended bool) string {
	axes := `"action_type":{"classified":"Read","confidence":0.95,"source":"llm_inference","conservative_default_applied":false},` +
		`"boundary":{"classified":"Intra-org","confidence":0.9,"source":"llm_inference","conservative_default_applied":false}`
	if extended {
		axes += `,"sensitivity":{"classified":"Internal","confidence":0.8,"source":"llm_inference","conservative_default_applied":false}` +
			`,"scale":{"classified":"Targeted","confidence":0.85,"source":"llm_inference","conservative_default_applied":false}` +
			`,"reversibility":{"classified":"Reversible","confidence":0.75,"source":"llm_inference","conservative_default_applied":false}`
	}
	return fmt.Sprintf(`{"tool_name":%q,"axes":{%s},"capability_class_verdict":"","capability_class_confidence":0.6,`+
		`"composite_confidence":0.9,"consistent_with_declaration":true}`, tool, axes)
}

// llmDescriptor is a call as the decision point builds it.
func llmDescriptor(session string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{
		TxnID:           intercept.NewTxnID(),
		ToolName:        "read_invoice",
		ToolDescription: "Reads one invoice from the finance system.",
		Parameters:      jsontext.Value(`{"invoice_id": "INV-2024-0042", "fields": ["amount", "vendor"]}`),
		TargetEndpoint:  "https://finance.acme.internal/api/invoices",
		SessionID:       session,
		Upstream:        "finance",
		Agent:           "taxbot",
		CallID:          jsontext.Value(`7`),
	}
}

// llmClosedURL is the address of a provider that is down: every
// connection is reset, and no other test can take the port meanwhile.
func llmClosedURL(t testing.TB) string {
	return "http://" + deadpeer.Addr(t)
}

func mustLLM(t testing.TB, o LLMOptions) *LLM {
	t.Helper()
	l, err := NewLLM(o)
	if err != nil {
		t.Fatalf("NewLLM: %v", err)
	}
	return l
}

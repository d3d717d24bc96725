package classifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// Provider names an LLM wire protocol.
type Provider string

// Supported providers.
const (
	// ProviderOpenAI speaks OpenAI chat completions. Ollama, vLLM and the
	// llama.cpp server expose the same API; point BaseURL at them.
	ProviderOpenAI Provider = "openai"
	// ProviderAnthropic speaks the Anthropic Messages API.
	ProviderAnthropic Provider = "anthropic"
	// ProviderGemini speaks the Gemini generateContent API.
	ProviderGemini Provider = "gemini"
)

// providerDefaults are the vendors' endpoints and the models RFC-010 §8.2
// recommends (in their current names).
var providerDefaults = map[Provider]struct{ baseURL, model string }{
	ProviderOpenAI:    {"https://api.openai.com", "gpt-4o-mini"},
	ProviderAnthropic: {"https://api.anthropic.com", "claude-haiku-4-5"},
	ProviderGemini:    {"https://generativelanguage.googleapis.com", "gemini-2.5-flash"},
}

const (
	// providerMaxReply bounds what is read from a provider; a verdict is
	// a few hundred bytes.
	providerMaxReply = 1 << 20
	// providerMaxTokens bounds the model's reply where the API needs a bound.
	providerMaxTokens = 1024
	// anthropicVersion is the Messages API version the wire format follows.
	anthropicVersion = "2023-06-01"
)

// providerWire is one vendor's HTTP shape: how to ask for a completion, how
// to find the model's text in the answer, and how to check reachability
// without spending tokens.
type providerWire interface {
	completion(ctx context.Context, c *providerConn, system, user string) (*http.Request, error)
	text(body []byte) (string, error)
	probe(ctx context.Context, c *providerConn) (*http.Request, error)
}

// providerConn is what every request needs. It never changes after New.
type providerConn struct {
	base  string // no trailing slash, no version segment
	model string
	key   string
}

func wireFor(p Provider) (providerWire, bool) {
	switch p {
	case ProviderOpenAI:
		return openAIWire{}, true
	case ProviderAnthropic:
		return anthropicWire{}, true
	case ProviderGemini:
		return geminiWire{}, true
	}
	return nil, false
}

// providerBaseURL normalises an operator's base URL: without a trailing
// slash and without the API version segment the wire format appends itself,
// so "http://localhost:11434/v1" and "http://localhost:11434" both work.
func providerBaseURL(p Provider, raw string) (string, error) {
	if raw == "" {
		return providerDefaults[p].baseURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http(s)://host[:port][/path]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: remove the query and fragment", raw)
	}
	s := strings.TrimRight(u.String(), "/")
	version := "/v1"
	if p == ProviderGemini {
		version = "/v1beta"
	}
	return strings.TrimSuffix(s, version), nil
}

func jsonRequest(ctx context.Context, url string, body any) (*http.Request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// errProviderReply reports a 2xx answer whose envelope is not the vendor's:
// the server is not speaking the protocol, which counts against the breaker.
var errProviderReply = errors.New("provider reply is not in the provider's wire format")

// OpenAI chat completions: POST {base}/v1/chat/completions.

type openAIWire struct{}

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model          string          `json:"model"`
	Messages       []openAIMessage `json:"messages"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Temperature float64 `json:"temperature"`
}

type openAIResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func (openAIWire) completion(ctx context.Context, c *providerConn, system, user string) (*http.Request, error) {
	body := openAIRequest{
		Model: c.model,
		Messages: []openAIMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
		},
	}
	body.ResponseFormat.Type = "json_object"
	req, err := jsonRequest(ctx, c.base+"/v1/chat/completions", body)
	if err != nil {
		return nil, err
	}
	if c.key != "" { // local servers (Ollama, llama.cpp) run without one
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req, nil
}

func (openAIWire) text(body []byte) (string, error) {
	var r openAIResponse
	if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) == 0 {
		return "", errProviderReply
	}
	m := r.Choices[0].Message
	if m.Content == nil {
		if m.Refusal != nil {
			return "", fmt.Errorf("%w: the model refused", ErrInvalidReply)
		}
		return "", fmt.Errorf("%w: no content in choices[0].message", ErrInvalidReply)
	}
	return *m.Content, nil
}

func (openAIWire) probe(ctx context.Context, c *providerConn) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req, nil
}

// Anthropic Messages: POST {base}/v1/messages.

type anthropicWire struct{}

type anthropicRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      string          `json:"system"`
	Messages    []openAIMessage `json:"messages"` // same {role, content} shape
	Temperature float64         `json:"temperature"`
}

type anthropicResponse struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
}

func anthropicHeaders(req *http.Request, c *providerConn) {
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("anthropic-version", anthropicVersion)
}

func (anthropicWire) completion(ctx context.Context, c *providerConn, system, user string) (*http.Request, error) {
	req, err := jsonRequest(ctx, c.base+"/v1/messages", anthropicRequest{
		Model:     c.model,
		MaxTokens: providerMaxTokens,
		System:    system,
		Messages:  []openAIMessage{{Role: "user", Content: user}},
	})
	if err != nil {
		return nil, err
	}
	anthropicHeaders(req, c)
	return req, nil
}

func (anthropicWire) text(body []byte) (string, error) {
	var r anthropicResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Type != "message" {
		return "", errProviderReply
	}
	for _, b := range r.Content {
		if b.Type == "text" {
			return b.Text, nil
		}
	}
	return "", fmt.Errorf("%w: no text block in content (stop_reason %q)", ErrInvalidReply, r.StopReason)
}

func (anthropicWire) probe(ctx context.Context, c *providerConn) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	anthropicHeaders(req, c)
	return req, nil
}

// Gemini: POST {base}/v1beta/models/{model}:generateContent.

type geminiWire struct{}

type geminiPart struct {
	Text string `json:"text"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	SystemInstruction geminiContent   `json:"systemInstruction"`
	Contents          []geminiContent `json:"contents"`
	GenerationConfig  struct {
		ResponseMIMEType string  `json:"responseMimeType"`
		Temperature      float64 `json:"temperature"`
		MaxOutputTokens  int     `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

type geminiResponse struct {
	Candidates []struct {
		Content struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
}

func (geminiWire) modelURL(c *providerConn) string {
	// Google writes model names both as "gemini-2.5-flash" and as
	// "models/gemini-2.5-flash"; the path wants one "models/".
	return c.base + "/v1beta/models/" + url.PathEscape(strings.TrimPrefix(c.model, "models/"))
}

func (w geminiWire) completion(ctx context.Context, c *providerConn, system, user string) (*http.Request, error) {
	body := geminiRequest{
		SystemInstruction: geminiContent{Parts: []geminiPart{{Text: system}}},
		Contents:          []geminiContent{{Role: "user", Parts: []geminiPart{{Text: user}}}},
	}
	body.GenerationConfig.ResponseMIMEType = "application/json"
	body.GenerationConfig.MaxOutputTokens = providerMaxTokens
	req, err := jsonRequest(ctx, w.modelURL(c)+":generateContent", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-goog-api-key", c.key) // a header, so the key never sits in a URL or an url.Error
	return req, nil
}

func (geminiWire) text(body []byte) (string, error) {
	var r geminiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return "", errProviderReply
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			return "", fmt.Errorf("%w: prompt blocked (%s)", ErrInvalidReply, r.PromptFeedback.BlockReason)
		}
		return "", errProviderReply
	}
	parts := r.Candidates[0].Content.Parts
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: no parts in candidates[0] (finishReason %q)", ErrInvalidReply, r.Candidates[0].FinishReason)
	}
	return parts[0].Text, nil
}

func (w geminiWire) probe(ctx context.Context, c *providerConn) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.modelURL(c), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-goog-api-key", c.key)
	return req, nil
}

// providerStatusError is a non-2xx answer. Its text carries the status and
// the start of the body with the API key cut out, so logs can say "model not
// found" or "rate limited" without ever holding the key.
type providerStatusError struct {
	Status  int
	Snippet string
	// RetryAfter is how long a 429 or 503 answer asked the client to
	// wait (Retry-After, or OpenAI's retry-after-ms), 0 if it did not.
	RetryAfter time.Duration
}

func (e *providerStatusError) Error() string {
	if e.Snippet == "" {
		return fmt.Sprintf("provider answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("provider answered HTTP %d: %s", e.Status, e.Snippet)
}

// do sends req and returns the body of a 2xx answer.
func (c *providerConn) do(client *http.Client, req *http.Request) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, providerMaxReply+1))
	if err != nil {
		return nil, fmt.Errorf("reading provider reply: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &providerStatusError{Status: resp.StatusCode, Snippet: c.snippet(body)}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			se.RetryAfter = retryAfter(resp.Header, time.Now())
		}
		return nil, se
	}
	if len(body) > providerMaxReply {
		return nil, fmt.Errorf("%w: reply larger than %d bytes", errProviderReply, providerMaxReply)
	}
	return body, nil
}

// retryAfter is how long h asks to wait: OpenAI's retry-after-ms (its
// SDKs read it first), else Retry-After in seconds or as an HTTP date;
// 0 if neither says.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return seconds(ms / 1000)
	}
	v := h.Get("Retry-After")
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return seconds(secs)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// seconds is secs as a Duration: 0 if not positive, the longest one if
// past it.
func seconds(secs float64) time.Duration {
	switch {
	case !(secs > 0):
		return 0
	case secs >= float64(math.MaxInt64/time.Second):
		return math.MaxInt64
	}
	return time.Duration(secs * float64(time.Second))
}

// snippet is the start of an error body, on one line, without the key.
func (c *providerConn) snippet(body []byte) string {
	const max = 200
	if len(body) > 1024 {
		body = body[:1024] // a key cut here is caught as a prefix by redact
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	return llmTruncate(c.redact(s), max)
}

// redact removes the API key, and any long run of it, from s.
func (c *providerConn) redact(s string) string {
	if c.key == "" {
		return s
	}
	s = strings.ReplaceAll(s, c.key, "[REDACTED]")
	// Vendors echo keys masked in the middle ("sk-abc***xyz"); the visible
	// prefix is harmless, but a truncated echo of the whole key is not.
	if n := len(c.key); n >= 16 {
		for cut := n - 1; cut >= 12; cut-- {
			if i := strings.Index(s, c.key[:cut]); i >= 0 {
				s = s[:i] + "[REDACTED]" + s[i+cut:]
			}
		}
	}
	return s
}

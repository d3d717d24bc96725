package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/audit"
)

// openAIVerdict is a provider speaking OpenAI's chat completions format,
// answering every classification with a confident Read verdict, and
// counting the requests it is sent.
func openAIVerdict(t *testing.T, sent *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet { // the probe: list models
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini"}]}`)
			return
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test-not-a-real-key" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		sent.Add(1)
		verdict := `{"tool_name":"echo","axes":{"action_type":{"classified":"Read","confidence":0.95,"source":"llm_inference","conservative_default_applied":false},` +
			`"boundary":{"classified":"Intra-org","confidence":0.9,"source":"llm_inference","conservative_default_applied":false}},` +
			`"capability_class_verdict":"","capability_class_confidence":0.6,"composite_confidence":0.9,"consistent_with_declaration":true}`
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": verdict}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClassifierBudgetRecorded: an agent's calls past classifier.budget
// are not sent to the provider; they get every axis at its conservative default, which
// the intent_classified events record (source over_budget) and
// sluice_classifier_over_budget_total counts; the policy's allow stands
// (on_escalate: log), nothing is blocked.
func TestClassifierBudgetRecorded(t *testing.T) {
	var sent atomic.Int32
	provider := openAIVerdict(t, &sent)
	t.Setenv("SLUICE_TEST_KEY", "sk-test-not-a-real-key")
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\ntelemetry: {prometheus: true}\n"+
		"classifier: {provider: openai, base_url: '"+provider.URL+"', api_key_env: SLUICE_TEST_KEY, budget: {per_agent_per_minute: 2}}\n")
	for i := range 5 {
		got := modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"m`+string(rune('a'+i))+`"}}`)
		if !strings.Contains(got, `m`+string(rune('a'+i))) || strings.Contains(got, `"isError":true`) {
			t.Fatalf("call %d: got %s, want the echo", i, got)
		}
	}
	if n := sent.Load(); n != 2 {
		t.Errorf("5 calls of one agent sent %d classifications to the provider, want its budget of 2", n)
	}
	resp, err := http.Get("http://" + g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^sluice_classifier_over_budget_total\{[^}]*scope="agent"[^}]*\} 3$`).Match(metrics) {
		t.Errorf("/metrics: no sluice_classifier_over_budget_total of 3 for scope agent:\n%s", regexp.MustCompile(`(?m)^sluice_classifier.*$`).FindAll(metrics, -1))
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName), "--type", "sluice.intent_classified"}, &out); err != nil {
		t.Fatal(err)
	}
	over := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(line, `"source":"over_budget"`) {
			over++
			if !strings.Contains(line, "over the LLM classifier's budget") {
				t.Errorf("an over-budget event does not say why: %s", line)
			}
		}
	}
	if over != 3 {
		t.Errorf("%d intent_classified events with source over_budget, want 3:\n%s", over, &out)
	}
}

// (Found by a review.) TestClassifierBudgetInSummary: the start-up
// summary's classifier line says an LLM provider's budget, what happens
// past it and the metric that counts it; before, a deployment whose
// traffic was over it learnt only from each call's event, if it looked.
func TestClassifierBudgetInSummary(t *testing.T) {
	var sent atomic.Int32
	provider := openAIVerdict(t, &sent)
	t.Setenv("SLUICE_TEST_KEY", "sk-test-not-a-real-key")
	for _, c := range []struct{ budget, want string }{
		{"", "60 calls a minute per agent, 600 in all"},
		{"budget: {per_agent_per_minute: 5, total_per_minute: -1}, ", "5 calls a minute per agent, no bound in all"},
	} {
		lines := serveLogged(t, "policy: {default: allow}\nclassifier: {provider: openai, base_url: '"+provider.URL+"', "+c.budget+"api_key_env: SLUICE_TEST_KEY}\n", "", func(string) {})
		l := find(lines, "classifier", map[string]any{"provider": "openai"})
		b, _ := l["llm_budget"].(string)
		if !strings.HasPrefix(b, c.want) || !strings.Contains(b, "conservative default") || !strings.Contains(b, "sluice_classifier_over_budget_total") {
			t.Errorf("classifier line %v: llm_budget %q, want it to start %q and say what happens past it", l, b, c.want)
		}
	}
	lines := serveLogged(t, "policy: {default: allow}\n", "", func(string) {})
	if l := find(lines, "classifier", map[string]any{"provider": "builtin"}); l == nil || l["llm_budget"] != nil {
		t.Errorf("builtin classifier line %v: want no llm_budget", l)
	}
}

// TestAttackRenameFreshLLMBudget: an agent renaming itself at each call
// (clientInfo.name, a spoofed X-Forwarded-For) gets no fresh budget: with
// API keys its key's principal is the agent; without, its address is
// (loopback one). Another principal's budget is its own. Found sound.
func TestAttackRenameFreshLLMBudget(t *testing.T) {
	var sent atomic.Int32
	provider := openAIVerdict(t, &sent)
	t.Setenv("SLUICE_TEST_KEY", "sk-test-not-a-real-key")
	const cfg = "policy: {default: allow, result_mode: tool_result}\n" +
		"classifier: {provider: openai, api_key_env: SLUICE_TEST_KEY, budget: {per_agent_per_minute: 2}, base_url: '"
	keyFile, alice, mallory := aliceAndMallory(t)
	authed := startServe(t, cfg+provider.URL+"'}\nauth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	open := startServe(t, cfg+provider.URL+"'}\n")
	call := func(g *running, c *http.Client, name string, i int) {
		t.Helper()
		got := modernCallFrom(t, c, g.url, name, "tools/call", "echo", `{"name":"echo","arguments":{"message":"m`+strconv.Itoa(i)+`"}}`)
		if !strings.Contains(got, "m"+strconv.Itoa(i)) {
			t.Fatalf("call %d as %s: got %s, want the echo", i, name, got)
		}
	}
	as := func(key string) *http.Client { return &http.Client{Transport: bearer{key, http.DefaultTransport}} }
	for i := range 6 {
		call(authed, as(mallory), "mallory-"+strconv.Itoa(i), i)
	}
	if n := sent.Load(); n != 2 {
		t.Errorf("6 calls under one key, each named anew: %d sent to the provider, want the key's budget of 2", n)
	}
	call(authed, as(alice), "alice", 100)
	if n := sent.Load(); n != 3 {
		t.Errorf("alice's call after mallory's: %d sent in all, want 3", n)
	}
	sent.Store(0)
	for i := range 6 {
		c := forwardingFor("127.0.0.1", func(int) string { return "198.51.100." + strconv.Itoa(i) })
		call(open, c, "anon-"+strconv.Itoa(i), 200+i)
	}
	if n := sent.Load(); n != 2 {
		t.Errorf("6 unauthenticated calls from one address, each named anew: %d sent, want the address's budget of 2", n)
	}
}

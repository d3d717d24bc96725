package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/audit"
)

// TestAttackSecretKeysSentToClassifier: audit.secret_keys names the keys
// whose values have nothing about them to recognise (a member id, an account
// number), and the README says an LLM provider is sent the call's
// descriptor with secret-looking arguments redacted. The provider, a
// third party, was sent the arguments redacted by the built-in words
// only: the values audit.secret_keys names, redacted in the record,
// reached it as the agent sent them.
func TestAttackSecretKeysSentToClassifier(t *testing.T) {
	const ssn = "078-05-1120"
	var mu sync.Mutex
	var sent bytes.Buffer
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the probe: list models
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent.Write(b)
		mu.Unlock()
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer provider.Close()
	t.Setenv("SLUICE_TEST_KEY", "sk-test-not-a-real-key")
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\n"+
		"audit: {keep_arguments: true, secret_keys: [member_id]}\n"+
		"classifier: {provider: openai, base_url: '"+provider.URL+"', api_key_env: SLUICE_TEST_KEY, on_escalate: approve}\n")
	modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi","member_id":"`+ssn+`"}}`)
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), ssn) || !strings.Contains(out.String(), `"member_id":"[REDACTED]"`) {
		t.Fatalf("the record: want the ssn redacted by audit.secret_keys:\n%s", &out)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(sent.String(), "echo") {
		t.Fatalf("the provider was sent no classification: %q", sent.String())
	}
	if strings.Contains(sent.String(), ssn) {
		t.Errorf("the LLM provider was sent the value audit.secret_keys names: %s", sent.String())
	}
}

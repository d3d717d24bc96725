package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/deadpeer"
)

// deadClassifier is a classifier section whose LLM provider resets every
// connection: every call it judges escalates (composite 0).
func deadClassifier(t *testing.T, extra string) string {
	t.Helper()
	t.Setenv("SLUICE_TEST_KEY", "sk-test-not-a-real-key")
	return "classifier: {provider: openai, base_url: 'http://" + deadpeer.Addr(t) + "', api_key_env: SLUICE_TEST_KEY, timeout: 200ms" + extra + "}\n"
}

const echoCall = `{"name":"echo","arguments":{"message":"hi"}}`

// modernCallCaps is a 2026-07-28 tools/call of echo whose client declares
// caps as its capabilities.
func modernCallCaps(t *testing.T, url, caps string) string {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent-1","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + meta + `}}`
	_, _, got := authedRequest(t, http.MethodPost, url, "", body, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
	return got
}

// TestEscalationHoldsOnlyWhereAnswered: a call the policy allows and the
// classifier escalates is held only when the operator asked for holding
// (on_escalate: approve) and someone can answer it: an operator through
// the admin API, or the client's user when clients may answer and this
// client can be asked (2026-07-28: it declares elicitation in _meta; 2025:
// it declared elicitation at initialize). Otherwise the allow stands.
func TestEscalationHoldsOnlyWhereAnswered(t *testing.T) {
	const policy = "policy: {default: allow, result_mode: tool_result}\n"
	passed := func(got string) bool {
		return strings.Contains(got, "Echo: hi") && !strings.Contains(got, "classifier_escalation")
	}

	t.Run("default is transparent", func(t *testing.T) {
		g := startServe(t, policy+deadClassifier(t, ""))
		if got := modernCall(t, g.url, "tools/call", "echo", echoCall); !passed(got) {
			t.Errorf("escalated call without on_escalate: got %s, want it forwarded", got)
		}
	})
	t.Run("nobody can answer", func(t *testing.T) {
		g := startServe(t, policy+"admin_listen: off\n"+deadClassifier(t, ", on_escalate: approve"))
		if got := modernCall(t, g.url, "tools/call", "echo", echoCall); !passed(got) {
			t.Errorf("escalated call, approve but no admin API and clients may not answer: got %s, want it forwarded", got)
		}
	})
	t.Run("operator", func(t *testing.T) {
		g := startServe(t, policy+deadClassifier(t, ", on_escalate: approve"))
		if got := modernCall(t, g.url, "tools/call", "echo", echoCall); !strings.Contains(got, `"code":"classifier_escalation"`) {
			t.Errorf("escalated call with an admin API: got %s, want it held", got)
		}
	})
	t.Run("client 2026-07-28", func(t *testing.T) {
		g := startServe(t, policy+"admin_listen: off\napprovals: {client_may_answer: true}\n"+deadClassifier(t, ", on_escalate: approve"))
		if got := modernCallCaps(t, g.url, `{}`); !passed(got) {
			t.Errorf("escalated call from a client that cannot be asked: got %s, want it forwarded", got)
		}
		if got := modernCallCaps(t, g.url, `{"elicitation":{}}`); !strings.Contains(got, `"resultType":"input_required"`) {
			t.Errorf("escalated call from a client that declares elicitation: got %s, want input_required", got)
		}
	})
	t.Run("client 2025", func(t *testing.T) {
		g := startServe(t, policy+"admin_listen: off\napprovals: {client_may_answer: true}\n"+deadClassifier(t, ", on_escalate: approve"))
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + echoCall + `}`
		session := func(caps string) map[string]string {
			init := strings.Replace(initializeBody, `"capabilities":{}`, `"capabilities":`+caps, 1)
			status, h, body := authedRequest(t, http.MethodPost, g.url, "", init, nil)
			if status != 200 || h.Get("Mcp-Session-Id") == "" {
				t.Fatalf("initialize: got %d %s", status, body)
			}
			hdr := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
			authedRequest(t, http.MethodPost, g.url, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
			return hdr
		}
		if _, _, got := authedRequest(t, http.MethodPost, g.url, "", call, session(`{}`)); !passed(got) {
			t.Errorf("escalated call in a session without elicitation: got %s, want it forwarded", got)
		}
		// With elicitation the POST's stream carries the question and stays
		// open for the answer: read its first event only.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := openPost(ctx, g.url, session(`{"elicitation":{}}`), call)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		select {
		case ev := <-sseEvents(resp.Body):
			if !strings.Contains(ev, `"method":"elicitation/create"`) {
				t.Errorf("escalated call in a session with elicitation: first event %s, want elicitation/create", ev)
			}
		case <-ctx.Done():
			t.Error("escalated call in a session with elicitation: no event, want elicitation/create")
		}
	})
}

// TestConfigValidateWarnsUnanswerable: on_escalate or on_injection approve
// with no admin_listen and clients not allowed to answer is a warning.
func TestConfigValidateWarnsUnanswerable(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		warn       bool
	}{
		{"nobody", "classifier: {on_escalate: approve}\n", true},
		{"injection nobody", "classifier: {on_injection: approve}\n", true},
		{"operator", "admin_listen: 127.0.0.1:9090\nclassifier: {on_escalate: approve}\n", false},
		{"client", "approvals: {client_may_answer: true}\nclassifier: {on_escalate: approve}\n", false},
		{"log", "classifier: {on_escalate: log}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := validateOut(t, "policy: {default: allow}\n"+tt.yaml)
			warned := strings.Contains(out, "warning: classifier.on_") && strings.Contains(out, "nobody could answer a held call")
			if warned != tt.warn {
				t.Errorf("config validate said %q: got a nobody-could-answer warning %v, want %v", out, warned, tt.warn)
			}
		})
	}
}

// validateOut runs sluice config validate on yaml, with a data_dir and an
// upstream, and returns what it printed.
func validateOut(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	yaml = "data_dir: " + t.TempDir() + "\nupstreams: [{name: demo, url: 'http://127.0.0.1:1/mcp'}]\n" + yaml
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runConfig(context.Background(), []string{"validate", path}, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

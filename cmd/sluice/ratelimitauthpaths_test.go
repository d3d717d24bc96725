package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthenticatedRateLimitOnEveryPath: with every unauthenticated
// caller one principal to rate limits (TestAttackRenamedAgentEscapesPrincipalLimit),
// a path whose authenticated calls lost their principal would put them
// all in that one bucket, and one agent's calls would spend every
// other's. On each transport, era and the virtual server, an
// authenticated agent's call under by: [principal] spends its own
// bucket (its next call, as a 2026-07-28 request, is rate_limited), and
// not another agent's.
func TestAuthenticatedRateLimitOnEveryPath(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "agent_keys.json")
	authed := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-agent, by: [principal], tool: read_document, rate: 1/h}]
virtual_servers: [{}]
auth: {mode: api_key, api_keys: {file: `+keyFile+`}}
`)
	base := strings.TrimSuffix(authed.url, "/mcp/demo")
	key := func(agent string) string { return liveKey(t, keyFile, base, agent) }
	reads := authedPaths(base)
	n := 0
	for name, read := range reads {
		n++
		agent := fmt.Sprintf("agent-%d", n)
		t.Run(name, func(t *testing.T) {
			k := key(agent)
			if got := read(t, k, "client")("read_document", readSalaries); !strings.Contains(got, "salary") {
				t.Fatalf("%s's first read_document: got %s", agent, got)
			}
			if got := modernCallWithKey(t, authed.url, k, "client", "read_document", readSalaries); !strings.Contains(got, "rate_limited") {
				t.Errorf("%s's second read_document: got %s, want rate_limited (its first spent its bucket)", agent, got)
			}
			if got := modernCallWithKey(t, authed.url, key("other-"+agent), "client", "read_document", readSalaries); !strings.Contains(got, "salary") {
				t.Errorf("another agent's read_document: got %s, want it served from its own bucket", got)
			}
		})
	}
}

// TestAuthenticatedRateLimitA2A: an authenticated A2A message spends its
// principal's bucket under by: [principal], not the one every
// unauthenticated caller shares nor another principal's.
func TestAuthenticatedRateLimitA2A(t *testing.T) {
	agentURL := serveBenchAgent(t)
	keyFile := filepath.Join(t.TempDir(), "agent_keys.json")
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-agent, by: [principal], upstream: "a2a:*", rate: 1/h}]
agents: [{name: reader, url: `+agentURL+`}]
auth: {mode: api_key, api_keys: {file: `+keyFile+`}}
`)
	base := strings.TrimSuffix(g.url, "/mcp/demo")
	send := func(key string) string {
		req, _ := http.NewRequest(http.MethodPost, base+"/a2a/reader", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	reader, other := liveKey(t, keyFile, base, "reader"), liveKey(t, keyFile, base, "other")
	if got := send(reader); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("the reader's A2A message: got %s, want it sent", got)
	}
	if got := send(reader); !strings.Contains(got, "rate_limited") {
		t.Errorf("the reader's second A2A message: got %s, want rate_limited", got)
	}
	if got := send(other); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Errorf("another principal's A2A message: got %s, want it sent from its own bucket", got)
	}
}

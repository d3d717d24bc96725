package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/bench"
)

// TestAttackA2ATokenOnMCPRoute (attacker review): an A2A agent served at
// /a2a/{name} is a resource of its own as an MCP route is, and a client
// asks its token for the agent's URL (RFC 8707). An audience naming
// …/a2a/{name} named no route, so it admitted the token everywhere: a
// token issued for the research agent opened every MCP route and every
// other A2A agent. It counts on that agent only (its JSON-RPC and REST
// endpoints); MCP route tokens stay off it, as before.
func TestAttackA2ATokenOnMCPRoute(t *testing.T) {
	as := newTestAS(t, map[string]string{"agent-a": "s3cret"})
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	abase := "http://" + aln.Addr().String()
	agent := &http.Server{Handler: bench.A2AAgent(abase)}
	go agent.Serve(aln)
	t.Cleanup(func() { agent.Close() })

	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + agents.Addr().String()
	startServeOn(t, agents, fmt.Sprintf(`policy: {default: allow, result_mode: tool_result}
upstreams: [{name: demo, url: "http://127.0.0.1:1/mcp"}]
agents: [{name: research, url: %s}, {name: other, url: %s}]
auth:
  mode: jwt
  jwt:
    issuer: %s
    audience: [%s/mcp/demo, %s/a2a/research]
    jwks_url: %s/jwks
`, abase, abase, as.srv.URL, base, base, as.srv.URL), nil)

	research := as.sign(map[string]any{"sub": "agent-a", "aud": base + "/a2a/research"})
	demo := as.sign(map[string]any{"sub": "agent-a", "aud": base + "/mcp/demo"})
	post := func(url, token, body string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent-a","version":"1"}}}`
	const send = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	for _, tc := range []struct {
		name, url, token, body string
		ok                     bool
	}{
		{"research token on research", base + "/a2a/research", research, send, true},
		{"research token on research's REST", base + "/a2a/research/rest/tasks/none", research, "", true},
		{"research token on an MCP route", base + "/mcp/demo", research, initialize, false},
		{"research token on another agent", base + "/a2a/other", research, send, false},
		{"demo token on research", base + "/a2a/research", demo, send, false},
		{"demo token on demo", base + "/mcp/demo", demo, initialize, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := post(tc.url, tc.token, tc.body)
			if tc.ok && got == http.StatusUnauthorized {
				t.Errorf("got %d, want the token taken", got)
			}
			if !tc.ok && got != http.StatusUnauthorized {
				t.Errorf("got %d with a token issued for another resource, want 401", got)
			}
		})
	}
}

package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackA2ASourceThenMCPSink: a route rule spanning both protocols
// the other way round from TestA2ACrossProtocolRouteRule (e2e): an agent's
// message to an A2A agent whose answers are a sensitive source is in the
// agent's route memory once forwarded, so its MCP network sink in any
// session is denied after it; another agent's is not.
func TestAttackA2ASourceThenMCPSink(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  a2a:stub/send: [source:sensitive]
  web/web_search: [sink:network]
route_rules:
  - {id: no-sink, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive answer}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, agent.URL, Options{AgentHeader: "X-Agent"})
	req := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"what are the salaries?"}]}}}`
	if _, body := postAs(t, srv.URL+"/a2a/stub", "alice", req); posts.Load() != 1 || strings.Contains(body, `"error"`) {
		t.Fatalf("alice's message: forwarded %d, %s", posts.Load(), body)
	}
	sink := func(who string) intercept.Decision {
		return intercept.Decide(context.Background(), p, &intercept.ActionDescriptor{TxnID: "t", Upstream: "web", ToolName: "web_search",
			Agent: who, SessionID: "another", Method: "tools/call", Parameters: jsontext.Value(`{}`)})
	}
	if dec := sink("alice"); dec.Verdict != intercept.Deny || dec.Evidence.MatchedRouteRuleID != "no-sink" {
		t.Errorf("alice's MCP sink after the A2A source: %+v, want no-sink's deny", dec)
	}
	if dec := sink("bob"); dec.Verdict != intercept.Allow {
		t.Errorf("bob's MCP sink: %+v, want allowed", dec)
	}
}

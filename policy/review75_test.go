package policy_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestClosedUpstreamProtocolMetaIsNoCarry: once a route rule closes an
// upstream, a call of its tool that is no sink still passes with what
// SDKs put in every request: a progress token (a number, a string such
// as a UUID), a W3C traceparent, 2026-07-28's protocolVersion,
// clientInfo and clientCapabilities, a task (2025-11-25).
func TestClosedUpstreamProtocolMetaIsNoCarry(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  tool_classes:
    docs/read_document: [source:sensitive]
    web/web_search: [sink:network]
  route_rules:
    - {id: no-net, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}}
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: p}
	ic.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"web_search","inputSchema":{"type":"object"}},{"name":"status","inputSchema":{"type":"object"}}]}`))
	ctx := context.Background()
	check := func(cc intercept.CallContext, body string) (intercept.Decision, bool) {
		msgs, _, err := intercept.Decode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		dec, _, ok := ic.CheckDecision(ctx, msgs[0], cc)
		return dec, ok
	}
	if _, ok := check(intercept.CallContext{Upstream: "docs", Agent: "a", SessionID: "s"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{}}}`); !ok {
		t.Fatal("the sensitive read was not forwarded")
	}
	web := intercept.CallContext{Upstream: "web", Agent: "a", SessionID: "s"}
	for _, meta := range []string{
		`{"progressToken":1}`,
		`{"progressToken":"6f1c0a52-8e3b-4c1e-9b7d-2a4f5e6d7c8b"}`,
		`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"progressToken":7}`,
	} {
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{},"task":{"ttl":1000},"_meta":` + meta + `}}`
		if dec, ok := check(web, body); !ok {
			t.Errorf("after the sensitive read: %s not forwarded (%s %s); status is no sink and the call carries nothing of the client's", body, dec.Verdict, dec.Reason)
		}
	}
}

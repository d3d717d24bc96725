package policy_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackCallAnswersReachClosedUpstream: once a route rule closes an
// upstream (its sink web_search after a sensitive read), the client's
// answer to that upstream's elicitation or sampling is denied as a carry
// (mcp:response), and so is a resources/read or prompts/get carrying
// 2026-07-28 inputResponses. A tools/call carrying them went through to
// the closed upstream when its tool (status) is no sink: the answers, or
// any other member, _meta or envelope member of the client's beside the
// arguments, reached the server the rule closed. A task-augmented call
// (params.task) is a call like any.
func TestAttackCallAnswersReachClosedUpstream(t *testing.T) {
	check, web := closedWebChecker(t)
	const (
		plain   = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`
		task    = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{},"task":{"ttl":60000}}}`
		answers = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"status","arguments":{},"inputResponses":{"q":{"action":"accept","content":{"note":"salaries: ..."}}}}}`
	)
	for _, body := range []string{plain, task, answers} {
		if _, ok := check(web, body); !ok {
			t.Fatalf("before the sensitive read: %s not forwarded", body)
		}
	}
	if _, ok := check(intercept.CallContext{Upstream: "docs", Agent: "a", SessionID: "s"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{}}}`); !ok {
		t.Fatal("the sensitive read was not forwarded")
	}
	for _, body := range []string{plain, task} {
		if dec, ok := check(web, body); !ok {
			t.Errorf("after the sensitive read: %s not forwarded (%s %s); status is no sink", body, dec.Verdict, dec.Reason)
		}
	}
	for _, body := range []string{
		answers,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"status","arguments":{},"InputResponses":{"q":{"action":"accept","content":{"note":"salaries"}}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"status","arguments":{},"note":"salaries: ..."}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"status","arguments":{},"_meta":{"note":"salaries: ..."}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"status","arguments":{}},"note":"salaries: ..."}`,
	} {
		if dec, ok := check(web, body); ok || dec.Reason != policy.ReasonRouteDeny {
			t.Errorf("after the sensitive read: %s forwarded=%v (%s %s); want denied %s: web is closed", body, ok, dec.Verdict, dec.Reason, policy.ReasonRouteDeny)
		}
	}
}

// closedWebChecker is the set-up of the closed-upstream tests: web's
// web_search is a sink, docs' read_document a sensitive source, and
// check decides a body in cc (web, agent a, session s, unless another).
func closedWebChecker(t *testing.T) (check func(cc intercept.CallContext, body string) (intercept.Decision, bool), web intercept.CallContext) {
	t.Helper()
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
	check = func(cc intercept.CallContext, body string) (intercept.Decision, bool) {
		msgs, _, err := intercept.Decode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		dec, _, ok := ic.CheckDecision(ctx, msgs[0], cc)
		return dec, ok
	}
	return check, intercept.CallContext{Upstream: "web", Agent: "a", SessionID: "s"}
}

// TestClosedUpstreamProtocolMetaIsNoCarry: once a route rule closes an
// upstream, a call of its tool that is no sink still passes with what
// SDKs put in every request: a progress token (a number, a string such
// as a UUID), a W3C traceparent, 2026-07-28's protocolVersion,
// clientInfo and clientCapabilities, a task (2025-11-25).
func TestClosedUpstreamProtocolMetaIsNoCarry(t *testing.T) {
	check, web := closedWebChecker(t)
	if _, ok := check(intercept.CallContext{Upstream: "docs", Agent: "a", SessionID: "s"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{}}}`); !ok {
		t.Fatal("the sensitive read was not forwarded")
	}
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

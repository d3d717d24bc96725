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
	web := intercept.CallContext{Upstream: "web", Agent: "a", SessionID: "s"}
	check := func(cc intercept.CallContext, body string) (intercept.Decision, bool) {
		msgs, _, err := intercept.Decode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		dec, _, ok := ic.CheckDecision(ctx, msgs[0], cc)
		return dec, ok
	}
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

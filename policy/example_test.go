package policy_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

func Example() {
	p, err := policy.Compile([]byte(`
policy:
  default: deny
  result_mode: tool_result
  tool_classes:
    read_document: [source:local, source:sensitive]
    web_search: [sink:network]
  rules:
    - id: allow-classified
      match: {match_any_class: [source:local, sink:network]}
      decision: allow
  route_rules:
    - id: no-sink-after-sensitive
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network]}
      scope: agent
      reason: no network sink after a sensitive read
`), "policy.yaml", policy.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, c := range []struct{ tool, session string }{
		{"web_search", "s1"},
		{"read_document", "s1"},
		{"web_search", "s2"}, // a new session of the same agent
		{"Web_Search", "s2"},
	} {
		d := &intercept.ActionDescriptor{ToolName: c.tool, Agent: "alice", SessionID: c.session}
		dec := intercept.Decide(ctx, p, d)
		if dec.Verdict == intercept.Allow {
			p.Forwarded(ctx, d, dec)
		}
		fmt.Printf("%s: %s (%s)", c.tool, dec.Verdict, dec.Reason)
		if id := dec.Evidence.MatchedRouteRuleID; id != "" {
			fmt.Printf(" by %s", id)
		}
		fmt.Println()
	}
	// Output:
	// web_search: allow (rule_allow)
	// read_document: allow (rule_allow)
	// web_search: deny (route_rule_deny) by no-sink-after-sensitive
	// Web_Search: deny (tool_name_lookalike)
}

func ExampleCompile_error() {
	_, err := policy.Compile([]byte(`
rules:
  - id: r
    match: {match_tol: transfer_funds}
    decision: deny
`), "policy.yaml", policy.Options{})
	fmt.Println(err)
	// Output:
	// policy.yaml:4:13: rules[0].match.match_tol: unknown key "match_tol" in a matcher (did you mean "match_tool"?); known keys are match_tool, match_any_class, match_all_classes, upstream
}

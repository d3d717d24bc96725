package policy

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A rule whose condition reads only what a tools/list request already
// tells (the agent, tool, upstream, classes, principal) decides the tool
// for that agent: an allow only for carol hides the tool from dave, a
// deny for dave hides it from dave only. Conditions on arguments still
// leave a tool visible. Every hidden tool is denied for every call tried.
func TestVisibleAgentConditions(t *testing.T) {
	p := mustCompile(t, `
default: deny
tool_classes:
  web_search: [sink:network]
rules:
  - id: carol-searches
    match: {match_tool: web_search}
    when: 'agent == "carol"'
    decision: allow
  - id: no-shell-for-dave
    match: {match_tool: shell}
    when: 'agent == "dave"'
    decision: deny
  - id: shell
    match: {match_tool: shell}
    decision: allow
  - id: jwt-deploys
    match: {match_tool: deploy}
    when: 'principal.method == "jwt" && upstream == "ops"'
    decision: require_approval
  - id: small-sums
    match: {match_tool: add}
    when: 'args.a < 10 && agent == "dave"'
    decision: allow
`)
	ctx := context.Background()
	for _, tt := range []struct {
		tool, agent string
		want        bool
	}{
		{"web_search", "carol", true},
		{"web_search", "dave", false},
		{"shell", "dave", false},
		{"shell", "carol", true},
		{"deploy", "dave", false}, // no principal
		{"add", "dave", true},     // depends on the arguments
		{"add", "carol", true},    // a condition reading the arguments is not decided for the tool
	} {
		d := &intercept.ActionDescriptor{ToolName: tt.tool, Upstream: "ops", Agent: tt.agent, Parameters: jsontext.Value("{}")}
		got := p.Visible(ctx, d)
		if got != tt.want {
			t.Errorf("Visible(%s for %s) = %v, want %v", tt.tool, tt.agent, got, tt.want)
		}
		if got {
			continue
		}
		for _, args := range []string{`{}`, `{"a":1}`, `{"a":100}`} {
			c := *d
			c.Parameters = jsontext.Value(args)
			if dec := intercept.Decide(ctx, p, &c); dec.Verdict != intercept.Deny {
				t.Errorf("%s for %s with %s is hidden but decided %s", tt.tool, tt.agent, args, dec.Verdict)
			}
		}
	}
	with := &intercept.ActionDescriptor{ToolName: "deploy", Upstream: "ops", Agent: "dave", Parameters: jsontext.Value("{}"),
		Principal: &intercept.Principal{ID: "dave", Method: "jwt"}}
	if !p.Visible(ctx, with) {
		t.Error("deploy for a JWT principal on ops is hidden, but require_approval may hold it")
	}
}

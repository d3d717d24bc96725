package policy

import "testing"

func TestReadsArguments(t *testing.T) {
	p, err := Compile([]byte(`
default: allow
tool_classes:
  web_search: [sink:network]
rules:
  - id: big-adds
    match: {match_tool: add}
    when: 'args.a > 1000'
    decision: deny
  - id: agent-only
    match: {match_tool: echo}
    when: 'agent == "x"'
    decision: deny
  - id: network-args
    match: {match_any_class: [sink:network]}
    when: 'has(args.url)'
    decision: require_approval
`), "p.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		upstream, tool string
		want           bool
	}{
		{"", "add", true},
		{"demo", "add", true},
		{"", "echo", false}, // a condition, but not on args
		{"", "web_search", true},
		{"", "other", false},
	} {
		if got := p.ReadsArguments(tc.upstream, tc.tool); got != tc.want {
			t.Errorf("ReadsArguments(%q, %q): got %v, want %v", tc.upstream, tc.tool, got, tc.want)
		}
	}
}

package policy

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	p := mustCompile(t, `
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
  Web_Search: [sink:network]
rules:
  - id: no-web
    match: {match_any_class: [sink:network]}
    decision: deny
  - id: allow-web
    match: {match_tool: web_search}
    decision: allow
  - id: allow-web-on-one-upstream
    match: {match_tool: web_search, upstream: u1}
    decision: require_approval
  - id: conditional-deny
    match: {match_tool: read_document}
    when: 'args.x == 1'
    decision: deny
  - id: allow-read
    match: {match_tool: read_document}
    decision: allow
  - id: allow-read-again
    match: {match_tool: read_document}
    decision: allow
  - id: typo-class
    match: {match_any_class: [sink:netwrok]}
    decision: deny
  - id: send
    match: {match_tool: send_email}
    decision: allow
route_rules:
  - id: never
    after: {match_any_class: [source:secret]}
    deny: {match_all_classes: [sink:network, source:sensitive]}
`)
	got := p.Validate()
	var lines []string
	for _, w := range got {
		lines = append(lines, w.String())
	}
	all := strings.Join(lines, "\n")
	wants := []string{
		"test.yaml:10:5: rules[1]: warning: rule allow-web (allow) is unreachable: rule no-web (deny, line 7)",
		"test.yaml:13:5: rules[2]: warning: rule allow-web-on-one-upstream (require_approval) is unreachable: rule no-web",
		"test.yaml:23:5: rules[5]: warning: rule allow-read-again never decides: rule allow-read (line 20) comes first",
		"test.yaml:26:5: rules[6]: warning: rule typo-class uses class sink:netwrok, which no tool in tool_classes has (unknown_class)",
		"test.yaml:29:5: rules[7]: warning: tool send_email has no class in tool_classes",
		"route rule never uses class source:secret, which no tool in tool_classes has",
		"route rule never can never apply: no tool in tool_classes matches its after side",
		"route rule never can never apply: no tool in tool_classes matches its deny side",
		"test.yaml: warning: the configured tool names Web_Search, web_search look alike",
	}
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("got warnings\n%s\nwant one containing\n%s", all, w)
		}
	}
	if strings.Contains(all, "conditional-deny") || strings.Contains(all, "rules[4]:") {
		t.Errorf("got warnings\n%s\nwant none about conditional-deny or allow-read: a rule with a condition shadows nothing", all)
	}
}

func TestValidateQuiet(t *testing.T) {
	// The gateway's plain name lists use no classes: no class warnings.
	p := mustCompile(t, "allow: [echo, add]\ndeny: [send_email]\n")
	if got := p.Validate(); len(got) != 0 {
		t.Errorf("got %v, want no warnings", got)
	}
}

func TestValidateWarnsClassifierDeny(t *testing.T) {
	p, err := Compile([]byte("default: allow\nrules:\n  - id: cls\n    when: 'classification.action_type == \"Write\"'\n    decision: deny\n    reason: r\n  - id: hold\n    when: 'classification.action_type == \"Write\"'\n    decision: require_approval\n    reason: r\n"), "c.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range p.Validate() {
		if w.Code == WarnClassifierDeny {
			got = append(got, w.Msg)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "cls") {
		t.Errorf("got %q, want one classifier_sole_deny warning, for rule cls", got)
	}
}

package policy

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

const visiblePolicy = `
default: deny
result_mode: tool_result
tool_classes:
  read_document: [source:local, source:sensitive]
  list_dir: [source:local]
  web_search: [sink:network]
  files/write_file: [store:persistent]
  transfer_funds: [sink:payment]
  shell: [exec:local]
rules:
  - id: allow-local
    match: {match_any_class: [source:local]}
    decision: allow
  - id: secret-search
    match: {match_tool: web_search}
    when: 'args.q == "secret"'
    decision: deny
  - id: search
    match: {match_tool: web_search}
    decision: allow
  - id: big-transfers
    match: {match_tool: transfer_funds}
    when: 'args.amount > 1000'
    decision: require_approval
  - id: no-shell
    match: {match_any_class: [exec:local]}
    decision: deny
  - id: shell-for-admins
    match: {match_tool: shell}
    decision: allow
  - id: no-persistent-writes-on-files
    match: {upstream: files, match_any_class: [store:persistent]}
    decision: deny
  - id: writes
    match: {match_tool: write_file}
    decision: allow
route_rules:
  - id: no-exfil
    after: {match_any_class: [source:sensitive]}
    deny: {match_any_class: [sink:network]}
    scope: agent
deny: [delete_everything]
require_approval: [deploy]
allow: [echo]
manifests:
  reader: {allowed_classes: [source:local]}
  capped: {boundary_ceiling: local}
`

func TestVisible(t *testing.T) {
	p := mustCompile(t, visiblePolicy)
	allowAll := mustCompile(t, "default: allow\ndeny: [delete_everything]\nrules:\n  - {id: maybe, match: {match_tool: rm}, when: 'args.force == true', decision: deny}\n")
	tests := []struct {
		note                  string
		p                     *Policy
		tool, upstream, agent string
		want                  bool
	}{
		{"allow list", p, "echo", "up", "a", true},
		{"allowed by class", p, "read_document", "up", "a", true},
		{"a conditional deny and a route rule may not apply", p, "web_search", "up", "a", true},
		{"require_approval may be approved", p, "deploy", "up", "a", true},
		{"conditional require_approval", p, "transfer_funds", "up", "a", true},
		{"deny list", p, "delete_everything", "up", "a", false},
		{"unconditional deny by class beats a later allow", p, "shell", "up", "a", false},
		{"default deny, no rule can allow", p, "unknown_tool", "up", "a", false},
		{"deny pinned to an upstream", p, "write_file", "files", "a", false},
		{"the same name elsewhere has no class", p, "write_file", "other", "a", true},
		{"case variant is a look-alike", p, "ECHO", "up", "a", false},
		{"homoglyph is a look-alike", p, "еcho", "up", "a", false},
		{"a combining mark makes a look-alike", p, "e\u0301cho", "up", "a", false},
		{"manifest forbids a class", p, "read_document", "up", "reader", false},
		{"manifest allows every class", p, "list_dir", "up", "reader", true},
		{"manifest forbids tools without a class", p, "echo", "up", "reader", false},
		{"boundary ceiling rests on the call", p, "list_dir", "up", "capped", true},
		{"default allow", allowAll, "anything", "up", "a", true},
		{"default allow, conditional deny", allowAll, "rm", "up", "a", true},
		{"default allow, deny list", allowAll, "delete_everything", "up", "a", false},
		{"no policy", nil, "echo", "up", "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			d := &intercept.ActionDescriptor{ToolName: tt.tool, Upstream: tt.upstream, Agent: tt.agent, Parameters: jsontext.Value("{}")}
			if got := tt.p.Visible(context.Background(), d); got != tt.want {
				t.Errorf("Visible(%s on %s for %s): got %v, want %v", tt.tool, tt.upstream, tt.agent, got, tt.want)
			}
		})
	}
}

// TestVisibleNeverHidesAnAllowedCall checks Visible against Decide: a
// tool Visible hides is denied for every argument and history tried.
func TestVisibleNeverHidesAnAllowedCall(t *testing.T) {
	tools := []string{"echo", "read_document", "list_dir", "web_search", "write_file", "transfer_funds", "shell",
		"delete_everything", "deploy", "unknown_tool", "ECHO", "еcho"}
	args := []string{`{}`, `{"q":"secret"}`, `{"q":"x"}`, `{"amount":5}`, `{"amount":5000}`, `{"amount":"5000"}`}
	ctx := context.Background()
	hidden := 0
	for _, remembered := range []bool{false, true} {
		p := mustCompile(t, visiblePolicy)
		if remembered {
			for _, agent := range []string{"a", "reader", "capped"} {
				src := &intercept.ActionDescriptor{ToolName: "read_document", Upstream: "up", Agent: agent, SessionID: "s", Parameters: jsontext.Value("{}")}
				p.Forwarded(ctx, src, intercept.Decision{Verdict: intercept.Allow, Reason: ReasonRuleAllow})
			}
		}
		for _, agent := range []string{"a", "reader", "capped"} {
			for _, up := range []string{"up", "files"} {
				for _, tool := range tools {
					d := &intercept.ActionDescriptor{ToolName: tool, Upstream: up, Agent: agent, SessionID: "s", Parameters: jsontext.Value("{}")}
					if p.Visible(ctx, d) {
						continue
					}
					hidden++
					for _, a := range args {
						for _, boundary := range []string{"", "local", "external"} {
							c := *d
							c.Parameters, c.BoundaryDeclared = jsontext.Value(a), boundary
							// require_approval counts as allowed: a human may approve it.
							if got := intercept.Decide(ctx, p, &c); got.Verdict != intercept.Deny {
								t.Errorf("%s on %s for %s with %s (boundary %q, remembered %v) is hidden but decided %s (%s)", tool, up, agent, a, boundary, remembered, got.Verdict, got.Reason)
							}
						}
					}
				}
			}
		}
	}
	if hidden < 20 {
		t.Errorf("only %d tools were hidden; the test proves little", hidden)
	}
}

func TestWatcherVisible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, "default: allow\ndeny: [send_email]\n")
	w, err := NewWatcher(path, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{"echo": true, "send_email": false} {
		if got := w.Visible(context.Background(), call(tool)); got != want {
			t.Errorf("Visible(%s): got %v, want %v", tool, got, want)
		}
	}
}

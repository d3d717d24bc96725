package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// With OneUnauthenticatedAgent, calls without an authenticated principal
// are one agent to route memory, whatever names they give; a principal's
// memory is its own, and an unauthenticated caller naming itself as a
// principal neither reads nor writes it. Session memory stays a
// session's; requests outside a session (2026-07-28) share one. Without
// the option, memory is per name (policy test cases).
func TestOneUnauthenticatedAgent(t *testing.T) {
	const src = `
default: allow
tool_classes: {read: [source:sensitive], search: [sink:network], mail: [sink:email]}
route_rules:
  - {id: agent-rule, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}}
  - {id: session-rule, scope: session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:email]}}
`
	type step struct {
		tool, agent, session string
		principal            bool
		want                 intercept.Verdict
	}
	cases := []struct {
		name  string
		one   bool
		steps []step
	}{
		{"another name, agent scope", true, []step{
			{"read", "a", "s1", false, intercept.Allow},
			{"search", "b", "s2", false, intercept.Deny},
			{"search", "b", "", false, intercept.Deny},
		}},
		{"another name outside a session, session scope", true, []step{
			{"read", "a", "", false, intercept.Allow},
			{"mail", "b", "", false, intercept.Deny},
			{"mail", "b", "s1", false, intercept.Allow},
		}},
		{"a session is its own", true, []step{
			{"read", "a", "s1", false, intercept.Allow},
			{"mail", "a", "s1", false, intercept.Deny},
			{"mail", "b", "s2", false, intercept.Allow},
			{"mail", "b", "", false, intercept.Allow},
		}},
		{"principals are apart from the unauthenticated", true, []step{
			{"read", "bob", "s1", true, intercept.Allow},
			{"search", "bob", "s2", false, intercept.Allow},
			{"search", "bob", "s2", true, intercept.Deny},
			{"read", "alice", "", false, intercept.Allow},
			{"search", "alice", "", true, intercept.Allow},
		}},
		{"off: per name", false, []step{
			{"read", "a", "s1", false, intercept.Allow},
			{"search", "b", "s2", false, intercept.Allow},
			{"search", "a", "s2", false, intercept.Deny},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compile([]byte(src), "p.yaml", Options{OneUnauthenticatedAgent: c.one})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, s := range c.steps {
				d := call(s.tool)
				d.Agent, d.SessionID = s.agent, s.session
				if s.principal {
					d.Principal = &intercept.Principal{ID: s.agent, Method: "api_key"}
				}
				got, _ := p.Decide(ctx, d)
				if got.Verdict != s.want {
					t.Fatalf("step %d (%s as %q, principal %v, session %q): got %s/%s, want %s", i, s.tool, s.agent, s.principal, s.session, got.Verdict, got.Reason, s.want)
				}
				if err := p.Forwarded(ctx, d, got); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

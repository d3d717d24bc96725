package policy

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// carry is the descriptor of a completion sent to upstream, whose listed
// tools are tools (nil: none listed).
func carry(upstream string, tools []string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{Method: "completion/complete", ToolName: intercept.CarryPrefix + "completion/complete",
		Upstream: upstream, Agent: "a", SessionID: "s", Parameters: []byte(`{"method":"completion/complete"}`), UpstreamTools: tools}
}

// TestCarryClosedByRouteRule: a carry to an upstream is denied once a
// route rule closes the upstream or any of its tools, through whichever
// way the deny side names them, and allowed otherwise whatever default
// says; before the upstream has listed its tools every tool the policy
// names counts.
func TestCarryClosedByRouteRule(t *testing.T) {
	const head = "default: deny\nallow: [read_document]\ntool_classes:\n  docs/read_document: [source:sensitive]\n"
	for _, tc := range []struct {
		name, policy string
		d            *intercept.ActionDescriptor
		want         intercept.Verdict
		reason       string
	}{
		{"pinned class", head + "  web/web_search: [sink:network]\n", carry("web", []string{"web_search", "x"}), intercept.Deny, ReasonRouteDeny},
		{"pinned class, nothing listed", head + "  web/web_search: [sink:network]\n", carry("web", nil), intercept.Deny, ReasonRouteDeny},
		{"pinned elsewhere", head + "  web/web_search: [sink:network]\n", carry("docs", []string{"read_document"}), intercept.Allow, ReasonCarryAllow},
		{"bare class, listed", head + "  web_search: [sink:network]\n", carry("web", []string{"web_search"}), intercept.Deny, ReasonRouteDeny},
		{"bare class, not listed there", head + "  web_search: [sink:network]\n", carry("docs", []string{"read_document"}), intercept.Allow, ReasonCarryAllow},
		{"bare class, nothing listed", head + "  web_search: [sink:network]\n", carry("docs", nil), intercept.Deny, ReasonRouteDeny},
		{"deny side names the upstream", head, carry("web", []string{"x"}), intercept.Deny, ReasonRouteDeny},
		{"deny side names a tool", head, carry("mail", []string{"send_email"}), intercept.Deny, ReasonRouteDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.policy+`route_rules:
  - {id: r-class, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
  - {id: r-up, after: {match_any_class: [source:sensitive]}, deny: {upstream: web}, scope: agent}
  - {id: r-tool, after: {match_any_class: [source:sensitive]}, deny: {match_tool: send_email}, scope: agent}
`)
			ctx := context.Background()
			if dec := intercept.Decide(ctx, p, tc.d); dec.Verdict != intercept.Allow || dec.Reason != ReasonCarryAllow {
				t.Fatalf("before the read: got %s %s, want allow %s", dec.Verdict, dec.Reason, ReasonCarryAllow)
			}
			// The client's HTTP headers are closed by the same test
			// (intercept.RouteCloser).
			hd := *tc.d
			hd.Method, hd.ToolName, hd.Parameters = intercept.CarryHeaders, intercept.CarryPrefix+intercept.CarryHeaders, nil
			defer func() {
				if got, want := p.Closes(ctx, &hd), tc.want == intercept.Deny; got != want {
					t.Errorf("after the read: Closes got %v, want %v", got, want)
				}
			}()
			if p.Closes(ctx, &hd) {
				t.Errorf("before the read: Closes got true, want false")
			}
			src := &intercept.ActionDescriptor{ToolName: "read_document", Upstream: "docs", Agent: "a", SessionID: "s", Parameters: []byte(`{}`)}
			if err := p.Forwarded(ctx, src, intercept.Decide(ctx, p, src)); err != nil {
				t.Fatal(err)
			}
			dec := intercept.Decide(ctx, p, tc.d)
			if dec.Verdict != tc.want || dec.Reason != tc.reason {
				t.Errorf("after the read: got %s %s (%s), want %s %s", dec.Verdict, dec.Reason, dec.PublicReason, tc.want, tc.reason)
			}
			if tc.want == intercept.Deny && dec.Mode != intercept.ModeThrow {
				t.Errorf("a carry's deny: mode %q, want throw", dec.Mode)
			}
		})
	}
}

// TestCarryRules: rules naming a carry decide it; rules naming classes
// or upstreams (and conditions on a tool's arguments) do not; a
// tools/call cannot take a carry's name.
func TestCarryRules(t *testing.T) {
	p := mustCompile(t, `default: deny
rules:
  - {id: no-complete, match: {match_tool: web/mcp:completion/complete}, decision: deny}
  - {id: any-web, match: {upstream: web}, when: 'args.url.startsWith("https://")', decision: allow}
  - {id: net, match: {match_any_class: [sink:network]}, decision: deny}
`)
	ctx := context.Background()
	if dec := intercept.Decide(ctx, p, carry("web", nil)); dec.Verdict != intercept.Deny || dec.RuleID != "no-complete" {
		t.Errorf("carry named by a rule: got %s %s, want deny by no-complete", dec.Verdict, dec.RuleID)
	}
	if dec := intercept.Decide(ctx, p, carry("docs", nil)); dec.Verdict != intercept.Allow {
		t.Errorf("carry no rule names: got %s %s, want allow", dec.Verdict, dec.Reason)
	}
	d := &intercept.ActionDescriptor{Method: "tools/call", ToolName: "mcp:completion/complete", Upstream: "docs", Parameters: []byte(`{}`)}
	if dec := intercept.Decide(ctx, p, d); dec.Reason != ReasonReservedName {
		t.Errorf("tools/call of mcp:…: got %s %s, want %s", dec.Verdict, dec.Reason, ReasonReservedName)
	}
}

// read is the descriptor of a resources/read of uri on upstream; carries
// says whether it holds bytes of the client's choosing (not a URI the
// upstream listed).
func read(upstream, uri string, carries bool) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{Method: "resources/read", ToolName: intercept.ResourcePrefix + uri, Upstream: upstream,
		Agent: "a", SessionID: "s", Parameters: []byte(`{}`), ReadCarries: carries, UpstreamTools: []string{"web_search"}}
}

// TestReadCarriesClosedByRouteRule: a read that carries the client's bytes
// is denied like a carry once a route rule closes its upstream, whatever
// rule would allow it; a read of a listed item, and any read while the
// upstream is open, is decided as before (default_read, rules, classes).
func TestReadCarriesClosedByRouteRule(t *testing.T) {
	const head = "default: deny\nallow: [read_document]\ntool_classes:\n  docs/read_document: [source:sensitive]\n  web/web_search: [sink:network]\n"
	const routes = `route_rules:
  - {id: r-class, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
`
	for _, tc := range []struct {
		name, policy  string
		d             *intercept.ActionDescriptor
		before, after string // verdict and reason
	}{
		{"carries", head, read("web", "https://evil.example/?q=s", true), "allow default_allow", "deny route_rule_deny"},
		{"listed", head, read("web", "https://x.example/a", false), "allow default_allow", "allow default_allow"},
		{"carries, rule allows", head + "rules:\n  - {id: ok, match: {match_tool: \"web/resource:https://evil.example/?q=s\"}, decision: allow}\n",
			read("web", "https://evil.example/?q=s", true), "allow rule_allow", "deny route_rule_deny"},
		{"carries, other upstream", head, read("docs", "https://evil.example/?q=s", true), "allow default_allow", "allow default_allow"},
		{"carries, default_read deny", head + "default_read: deny\n", read("web", "https://evil.example/?q=s", true), "deny default_deny", "deny route_rule_deny"},
		{"listed, default_read deny", head + "default_read: deny\n", read("web", "https://x.example/a", false), "deny default_deny", "deny default_deny"},
		{"listed, classed as a sink", head + "  \"web/resource:*\": [sink:network]\n", read("web", "https://x.example/a", false), "allow default_allow", "deny route_rule_deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.policy+routes)
			ctx := context.Background()
			if dec := intercept.Decide(ctx, p, tc.d); string(dec.Verdict)+" "+dec.Reason != tc.before {
				t.Errorf("before the read: got %s %s, want %s", dec.Verdict, dec.Reason, tc.before)
			}
			src := &intercept.ActionDescriptor{ToolName: "read_document", Upstream: "docs", Agent: "a", SessionID: "s", Parameters: []byte(`{}`)}
			if err := p.Forwarded(ctx, src, intercept.Decide(ctx, p, src)); err != nil {
				t.Fatal(err)
			}
			dec := intercept.Decide(ctx, p, tc.d)
			if string(dec.Verdict)+" "+dec.Reason != tc.after {
				t.Errorf("after the read: got %s %s (%s), want %s", dec.Verdict, dec.Reason, dec.PublicReason, tc.after)
			}
			if dec.Reason == ReasonRouteDeny && dec.Mode != intercept.ModeThrow {
				t.Errorf("a read's deny: mode %q, want throw", dec.Mode)
			}
		})
	}
}

// TestClosesWithoutRoutes: without route rules nothing is closed; a nil
// policy, which denies everything, closes everything.
func TestClosesWithoutRoutes(t *testing.T) {
	ctx := context.Background()
	d := carry("web", nil)
	if mustCompile(t, "default: allow\n").Closes(ctx, d) {
		t.Error("no route rules: Closes got true, want false")
	}
	if !(*Policy)(nil).Closes(ctx, d) {
		t.Error("nil policy: Closes got false, want true")
	}
}

// TestClosesWhenMemoryFails: a route memory that cannot be read (Redis
// down or stalled past its timeout, a store that panics) closes the
// upstream a route rule's deny side names: the client's headers and ids
// are withheld rather than passed on unchecked.
func TestClosesWhenMemoryFails(t *testing.T) {
	for name, st := range map[string]Store{"error": failingStore{err: errors.New("redis is down")}, "panic": failingStore{panic: true}} {
		p, err := Compile([]byte(routePolicy), "p.yaml", Options{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Closes(context.Background(), carry("web", []string{"web_search"})) {
			t.Errorf("%s: Closes got false, want true (a memory that cannot be read closes)", name)
		}
	}
}

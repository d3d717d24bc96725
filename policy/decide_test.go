package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

func call(tool string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{ToolName: tool, Upstream: "up", Agent: "a", SessionID: "s", Parameters: jsontext.Value("{}")}
}

// RFC-0002: a missing policy denies with policy_not_configured, whether the
// decider is nil or a nil *Policy.
func TestMissingPolicy(t *testing.T) {
	for name, dec := range map[string]intercept.Decider{"nil decider": nil, "nil *Policy": (*Policy)(nil)} {
		got := intercept.Decide(context.Background(), dec, call("echo"))
		if got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyNotConfigured {
			t.Errorf("%s: got %s/%s, want deny/%s", name, got.Verdict, got.Reason, intercept.ReasonPolicyNotConfigured)
		}
	}
}

type failingStore struct {
	err   error
	panic bool
}

func (s failingStore) Remember(context.Context, Key, []string, time.Time) error { return s.err }
func (s failingStore) Seen(context.Context, Key, []string, time.Time) (bool, error) {
	if s.panic {
		panic("store exploded")
	}
	return false, s.err
}

const routePolicy = `
default: allow
result_mode: tool_result
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
route_rules:
  - id: no-exfil
    after: {match_any_class: [source:sensitive]}
    deny: {match_any_class: [sink:network]}
    reason: no network sink after a sensitive read
`

// RFC-0002: a policy that throws denies with policy_error, and the decision
// still carries the policy version and the evidence known so far. Sluice's
// "throws" are a route memory that fails or panics, and a condition that
// fails.
func TestPolicyErrorsDeny(t *testing.T) {
	tests := []struct {
		name  string
		store Store
	}{
		{"store error", failingStore{err: errors.New("redis is down")}},
		{"store panic", failingStore{panic: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile([]byte(routePolicy), "p.yaml", Options{Store: tt.store})
			if err != nil {
				t.Fatal(err)
			}
			got := intercept.Decide(context.Background(), p, call("web_search"))
			checkValid(t, got)
			if got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyError {
				t.Fatalf("got %s/%s, want deny/policy_error", got.Verdict, got.Reason)
			}
			if got.PolicyVersion != p.Version() || got.Evidence.MatchedToolName != "web_search" {
				t.Errorf("got version %q tool %q, want %q and web_search", got.PolicyVersion, got.Evidence.MatchedToolName, p.Version())
			}
			// A tool no route rule looks at does not touch the store.
			if got := intercept.Decide(context.Background(), p, call("read_document")); got.Verdict != intercept.Allow {
				t.Errorf("read_document: got %s/%s, want allow", got.Verdict, got.Reason)
			}
		})
	}
}

func TestConditionFailuresDeny(t *testing.T) {
	p, err := Compile([]byte(`
default: allow
rules:
  - id: small-lists
    match: {match_tool: batch}
    when: 'args.items.all(x, x.size() < 100)'
    decision: allow
  - id: no-secrets
    match: {match_tool: note}
    when: 'args.text.contains("secret")'
    decision: deny
`), "p.yaml", Options{CostLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for range 10_000 {
		items = append(items, "x")
	}
	big, _ := json.Marshal(map[string]any{"items": items})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		tool string
		args string
	}{
		{"cost limit exceeded", context.Background(), "batch", string(big)},
		{"invalid UTF-8", context.Background(), "note", "{\"text\": \"\xff\"}"},
		{"duplicate names", context.Background(), "note", `{"text": "hi", "text": "secret"}`},
		{"too deep", context.Background(), "note", strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)},
		{"not an object", context.Background(), "note", `"secret"`},
		{"trailing data", context.Background(), "note", `{"text": "hi"} {"text": "secret"}`},
		{"cancelled context", cancelled, "batch", string(big)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := call(tt.tool)
			d.Parameters = jsontext.Value(tt.args)
			got := intercept.Decide(tt.ctx, p, d)
			if got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyError {
				t.Errorf("got %s/%s, want deny/policy_error", got.Verdict, got.Reason)
			}
		})
	}
	d := call("note")
	d.Parameters = jsontext.Value(`{"text": "hello"}`)
	if got := intercept.Decide(context.Background(), p, d); got.Verdict != intercept.Allow {
		t.Errorf("harmless note: got %s/%s, want allow", got.Verdict, got.Reason)
	}
}

func TestConditionVariables(t *testing.T) {
	p := mustCompile(t, `
tool_classes:
  x: [sink:network, source:local]
rules:
  - id: all-vars
    match: {match_tool: x}
    when: >
      tool == "x" && upstream == "up" && agent == "a" && session == "s" &&
      "sink:network" in classes && classes[1] == "source:local" &&
      classification.size() == 0 && args.n == 1
    decision: allow
`)
	d := call("x")
	d.Parameters = jsontext.Value(`{"n": 1}`)
	if got := intercept.Decide(context.Background(), p, d); got.Verdict != intercept.Allow {
		t.Errorf("got %s/%s, want allow", got.Verdict, got.Reason)
	}
	d.Agent = "b"
	if got := intercept.Decide(context.Background(), p, d); got.Verdict != intercept.Deny || got.Reason != ReasonDefaultDeny {
		t.Errorf("other agent: got %s/%s, want deny/default_deny", got.Verdict, got.Reason)
	}
}

// RFC-0002 soft deny and hard deny: the decision's result mode decides how
// the interceptor renders it.
func TestResultModes(t *testing.T) {
	p := mustCompile(t, `
result_mode: tool_result
rules:
  - {id: soft, match: {match_tool: a}, decision: deny, public_reason: not now}
  - {id: hard, match: {match_tool: b}, decision: deny, result_mode: throw}
  - {id: hold, match: {match_tool: c}, decision: require_approval}
`)
	tests := []struct {
		tool string
		want []string
	}{
		{"a", []string{`"isError":true`, `"status":"denied"`, `"code":"rule_deny"`, `"publicReason":"not now"`}},
		{"b", []string{`"error":{"code":`, `"code":"rule_deny"`}},
		{"c", []string{`"isError":true`, `"status":"approval_required"`}},
		{"zzz", []string{`"isError":true`, `"code":"default_deny"`}},
	}
	for _, tt := range tests {
		dec := intercept.Decide(context.Background(), p, call(tt.tool))
		out := string(intercept.RenderDecision(jsontext.Value("1"), dec, "txn", "2025-06-18"))
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: got %s, want it to contain %s", tt.tool, out, w)
			}
		}
	}
}

func TestEvidence(t *testing.T) {
	p := mustCompile(t, routePolicy)
	ctx := context.Background()
	src := call("read_document")
	p.Forwarded(ctx, src, intercept.Decide(ctx, p, src))
	got := intercept.Decide(ctx, p, call("web_search"))
	want := intercept.Decision{
		Verdict: intercept.Deny, Reason: ReasonRouteDeny, PublicReason: "no network sink after a sensitive read",
		Mode: intercept.ModeToolResult, PolicyVersion: p.Version(), RuleID: "no-exfil",
		Evidence: intercept.Evidence{MatchedToolName: "web_search", MatchedToolClasses: []string{"sink:network"}, MatchedRouteRuleID: "no-exfil", ReasonCode: ReasonRouteDeny},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// Forwarded remembers only allowed calls: a denied source is no source.
func TestForwardedIgnoresDenials(t *testing.T) {
	p := mustCompile(t, routePolicy)
	ctx := context.Background()
	p.Forwarded(ctx, call("read_document"), intercept.Decision{Verdict: intercept.Deny})
	p.Forwarded(ctx, nil, intercept.Decision{Verdict: intercept.Allow})
	if got := intercept.Decide(ctx, p, call("web_search")); got.Verdict != intercept.Allow {
		t.Errorf("got %s/%s, want allow", got.Verdict, got.Reason)
	}
}

func TestExplain(t *testing.T) {
	p := mustCompile(t, routePolicy)
	ctx := context.Background()
	p.Forwarded(ctx, call("read_document"), intercept.Decision{Verdict: intercept.Allow})
	dec, trace := p.Explain(ctx, call("web_search"))
	if dec.Reason != ReasonRouteDeny {
		t.Errorf("got %s, want %s", dec.Reason, ReasonRouteDeny)
	}
	all := strings.Join(trace, "\n")
	for _, want := range []string{
		`call: tool "web_search" on upstream "up", agent "a", session "s"`,
		"classes: [sink:network]",
		"route rule no-exfil: deny side matches and the after side is in route memory session:1:a/s",
		"decision: deny, reason route_rule_deny",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("got trace\n%s\nwant a line with %q", all, want)
		}
	}
}

// The version is the hash of the compiled policy: layout, key order and the
// `policy:` wrapper do not change it; a rule does.
func TestVersion(t *testing.T) {
	a := mustCompile(t, "tool_classes: {a: [x], b: [y]}\nallow: [a]\n")
	b := mustCompile(t, "# same policy\npolicy:\n  allow:\n    - a\n  tool_classes:\n    b: [y]\n    a: [x]\n")
	c := mustCompile(t, "tool_classes: {a: [x], b: [y]}\nallow: [b]\n")
	if a.Version() != b.Version() {
		t.Errorf("got versions %s and %s for the same policy, want equal", a.Version(), b.Version())
	}
	if a.Version() == c.Version() {
		t.Errorf("got version %s for different policies, want different", a.Version())
	}
}

// The index must find exactly what a scan of every rule in file order
// finds. randomPolicy builds policies with overlapping tools, classes and
// upstreams; linearDecide is the obvious, slow reference.
func TestIndexMatchesLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tools := []string{"t0", "t1", "t2", "t3", "t4", "t5"}
	ups := []string{"u0", "u1", "u2"}
	for n := range 200 {
		src := randomPolicy(r, tools, ups)
		p, err := Compile([]byte(src), "random.yaml", Options{})
		if err != nil {
			t.Fatalf("policy %d: %v\n%s", n, err, src)
		}
		for _, tool := range tools {
			for _, up := range ups {
				d := &intercept.ActionDescriptor{ToolName: tool, Upstream: up, Parameters: jsontext.Value("{}")}
				got, _ := p.Decide(context.Background(), d)
				wantV, wantID := linearDecide(p, up, tool)
				if got.Verdict != wantV || got.RuleID != wantID {
					t.Fatalf("policy %d, %s/%s: got %s by %q, want %s by %q\n%s", n, up, tool, got.Verdict, got.RuleID, wantV, wantID, src)
				}
			}
		}
	}
}

func randomPolicy(r *rand.Rand, tools, ups []string) string {
	classes := []string{"c0", "c1", "c2", "c3"}
	pick := func(from []string) []string {
		var out []string
		for _, x := range from {
			if r.IntN(3) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	var b strings.Builder
	b.WriteString("default: deny\ntool_classes:\n")
	for _, tl := range tools {
		if cs := pick(classes); len(cs) > 0 {
			fmt.Fprintf(&b, "  %s: [%s]\n", tl, strings.Join(cs, ", "))
		}
		if r.IntN(4) == 0 {
			fmt.Fprintf(&b, "  %s/%s: [%s]\n", ups[r.IntN(len(ups))], tl, classes[r.IntN(len(classes))])
		}
	}
	b.WriteString("rules:\n")
	for i := range 1 + r.IntN(12) {
		var parts []string
		if ts := pick(tools); len(ts) > 0 {
			for j := range ts {
				if r.IntN(3) == 0 {
					ts[j] = ups[r.IntN(len(ups))] + "/" + ts[j]
				}
			}
			parts = append(parts, "match_tool: ["+strings.Join(ts, ", ")+"]")
		}
		if cs := pick(classes); len(cs) > 0 {
			parts = append(parts, "match_any_class: ["+strings.Join(cs, ", ")+"]")
		}
		if cs := pick(classes); len(cs) > 0 && r.IntN(2) == 0 {
			parts = append(parts, "match_all_classes: ["+strings.Join(cs, ", ")+"]")
		}
		if us := pick(ups); len(us) > 0 && r.IntN(2) == 0 {
			parts = append(parts, "upstream: ["+strings.Join(us, ", ")+"]")
		}
		fmt.Fprintf(&b, "  - id: r%d\n    decision: %s\n", i, []string{"allow", "deny", "require_approval"}[r.IntN(3)])
		if len(parts) > 0 {
			fmt.Fprintf(&b, "    match: {%s}\n", strings.Join(parts, ", "))
		}
	}
	return b.String()
}

func linearDecide(p *Policy, up, tool string) (intercept.Verdict, string) {
	classes, _ := p.lookup(up, tool)
	for slot := range 3 {
		for _, r := range p.rules {
			if r.slot == slot && r.m.matches(up, tool, classes) {
				return slotVerdict[slot], r.id
			}
		}
	}
	return p.def, ""
}

func TestConcurrentDecideAndForward(t *testing.T) {
	p := mustCompile(t, routePolicy)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				d := call([]string{"read_document", "web_search", "other"}[i%3])
				d.Agent = fmt.Sprint("agent", g)
				dec := intercept.Decide(ctx, p, d)
				if dec.Verdict == intercept.Allow {
					p.Forwarded(ctx, d, dec)
				}
			}
		})
	}
	wg.Wait()
	for g := range 8 {
		d := call("web_search")
		d.Agent = fmt.Sprint("agent", g)
		if got := intercept.Decide(ctx, p, d); got.Reason != ReasonRouteDeny {
			t.Errorf("agent%d: got %s, want %s", g, got.Reason, ReasonRouteDeny)
		}
	}
}

func TestMatchedClassesAreShared(t *testing.T) {
	// Evidence shares the policy's class slices instead of copying them on
	// every call; make sure a policy never hands out a slice it appends to.
	p := mustCompile(t, "tool_classes: {a: [x, y]}\nallow: [a]\n")
	got, _ := p.Decide(context.Background(), call("a"))
	if !slices.Equal(got.Evidence.MatchedToolClasses, []string{"x", "y"}) || cap(got.Evidence.MatchedToolClasses) != 2 {
		t.Errorf("got %v (cap %d), want [x y] with cap 2", got.Evidence.MatchedToolClasses, cap(got.Evidence.MatchedToolClasses))
	}
}

// A tool classed only as upstream/tool, explained without an upstream: the
// trace said "classes: none (add is not in tool_classes under /add or
// add)" for the README's `demo/add`, which the gateway does class. It
// names the key and the upstream to give instead.
func TestExplainToolClassedUnderUpstreamOnly(t *testing.T) {
	p := mustCompile(t, "tool_classes: {demo/add: [compute:local]}\nallow: [add]\n")
	ctx := context.Background()
	_, trace := p.Explain(ctx, &intercept.ActionDescriptor{ToolName: "add", Parameters: jsontext.Value("{}")})
	all := strings.Join(trace, "\n")
	if want := "classes: none (add is in tool_classes only as demo/add, and this call names no upstream: give one, as policy explain --upstream demo)"; !strings.Contains(all, want) {
		t.Errorf("got trace\n%s\nwant a line with %q", all, want)
	}
	_, trace = p.Explain(ctx, &intercept.ActionDescriptor{ToolName: "sub", Parameters: jsontext.Value("{}")})
	if all, want := strings.Join(trace, "\n"), "classes: none (sub is not in tool_classes)"; !strings.Contains(all, want) {
		t.Errorf("got trace\n%s\nwant a line with %q", all, want)
	}
	_, trace = p.Explain(ctx, &intercept.ActionDescriptor{ToolName: "add", Upstream: "demo", Parameters: jsontext.Value("{}")})
	if all, want := strings.Join(trace, "\n"), "classes: [compute:local]"; !strings.Contains(all, want) {
		t.Errorf("got trace\n%s\nwant a line with %q", all, want)
	}
}

package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// benchPolicy is the scale: 10,000 tool_classes entries, 1,000
// rules (name rules, class rules, upstream rules, conditional rules) and 20
// route rules.
func benchPolicy(tb testing.TB) *Policy {
	tb.Helper()
	var b strings.Builder
	b.WriteString("default: deny\nresult_mode: tool_result\ntool_classes:\n")
	for i := range 10_000 {
		kind := []string{"source", "sink", "store", "exec"}[i%4]
		fmt.Fprintf(&b, "  tool_%d: [%s:c%d, %s:any]\n", i, kind, i%50, kind)
	}
	b.WriteString("rules:\n")
	for i := range 1000 {
		switch {
		case i < 600: // name rules over the first 600 tools
			fmt.Fprintf(&b, "  - {id: name-%d, match: {match_tool: tool_%d}, decision: %s}\n", i, i*7%10_000, []string{"allow", "allow", "deny", "require_approval"}[i%4])
		case i < 900: // class rules
			kind := []string{"source", "sink", "store", "exec"}[i%4]
			decision := "allow"
			if i%50 >= 40 {
				decision = "deny"
			}
			fmt.Fprintf(&b, "  - {id: class-%d, match: {match_any_class: [%s:c%d]}, decision: %s}\n", i, kind, i%50, decision)
		case i < 950: // upstream rules
			fmt.Fprintf(&b, "  - {id: up-%d, match: {upstream: up%d}, decision: deny}\n", i, i)
		default: // conditional rules
			fmt.Fprintf(&b, "  - {id: cond-%d, match: {match_tool: pay_%d}, when: 'args.amount > %d', decision: require_approval}\n", i, i, i)
		}
	}
	b.WriteString("  - {id: allow-sources, match: {match_any_class: [source:any]}, decision: allow}\n")
	b.WriteString("  - {id: allow-sinks, match: {match_any_class: [sink:any]}, decision: allow}\n")
	b.WriteString("  - {id: pay-ok, match: {match_tool: pay_990}, decision: allow}\n")
	b.WriteString("route_rules:\n")
	for i := range 20 {
		after := fmt.Sprintf("match_any_class: [source:c%d]", 2*i)
		if i >= 10 {
			after = fmt.Sprintf("match_tool: never_%d", i)
		}
		fmt.Fprintf(&b, "  - {id: route-%d, after: {%s}, deny: {match_any_class: [sink:c%d]}, scope: agent, window: 24h}\n", i, after, 2*i+1)
	}
	p, err := Compile([]byte(b.String()), "bench.yaml", Options{})
	if err != nil {
		tb.Fatal(err)
	}
	// 100 remembered sources for the benchmark's agent.
	ctx := context.Background()
	for i := range 100 {
		d := &intercept.ActionDescriptor{ToolName: fmt.Sprintf("tool_%d", i*4+4000), Upstream: "files", Agent: "bench", SessionID: "s1"}
		p.Forwarded(ctx, d, intercept.Decision{Verdict: intercept.Allow})
	}
	return p
}

// Calls of the benchmark. Tool n has the classes kind:c(n%50) and
// kind:any, kind being source, sink, store, exec by n%4. The remembered
// sources hold every even source class. tool_2020 is a source allowed by a
// class rule; tool_0 is allowed by name; tool_2029 is sink:c29, which
// route-14 checks against route memory (its after side, a tool never
// called, is not there) before a class rule allows it; tool_3001 is
// sink:c1, denied by route-0 after source:c0.
var benchCalls = []struct {
	name, tool, args string
	want             intercept.Verdict
}{
	{"allow_by_class", "tool_2020", `{}`, intercept.Allow},
	{"allow_by_name", "tool_0", `{}`, intercept.Allow},
	{"allow_sink_route_checked", "tool_2029", `{}`, intercept.Allow},
	{"deny_route", "tool_3001", `{}`, intercept.Deny},
	{"require_approval_cel", "pay_990", `{"amount": 5000}`, intercept.RequireApproval},
	{"allow_cel_false", "pay_990", `{"amount": 5}`, intercept.Allow},
	{"deny_default_unknown_tool", "no_such_tool", `{}`, intercept.Deny},
	{"deny_lookalike", "TOOL_2020", `{}`, intercept.Deny},
}

func BenchmarkDecide(b *testing.B) {
	p := benchPolicy(b)
	ctx := context.Background()
	for _, bc := range benchCalls {
		d := &intercept.ActionDescriptor{ToolName: bc.tool, Upstream: "files", Agent: "bench", SessionID: "s1", Parameters: jsontext.Value(bc.args)}
		if got, _ := p.Decide(ctx, d); got.Verdict != bc.want {
			b.Fatalf("%s: got %s (%s, %s), want %s", bc.name, got.Verdict, got.Reason, got.RuleID, bc.want)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(ctx, d)
			}
		})
	}
}

func BenchmarkForwarded(b *testing.B) {
	p := benchPolicy(b)
	ctx := context.Background()
	d := &intercept.ActionDescriptor{ToolName: "tool_4000", Upstream: "files", Agent: "bench", SessionID: "s1"}
	dec := intercept.Decision{Verdict: intercept.Allow}
	b.ReportAllocs()
	for b.Loop() {
		p.Forwarded(ctx, d, dec)
	}
}

func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		benchPolicy(b)
	}
}

// The allow path must not allocate: it runs on every forwarded call.
func TestDecideAllowPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	p := benchPolicy(t)
	ctx := context.Background()
	for _, bc := range benchCalls[:3] {
		d := &intercept.ActionDescriptor{ToolName: bc.tool, Upstream: "files", Agent: "bench", SessionID: "s1", Parameters: jsontext.Value(bc.args)}
		if got := testing.AllocsPerRun(100, func() { p.Decide(ctx, d) }); got != 0 {
			t.Errorf("%s: got %v allocs per decision, want 0", bc.name, got)
		}
	}
	// And the route check really ran for the sink.
	d := &intercept.ActionDescriptor{ToolName: "tool_2029", Upstream: "files", Agent: "bench", SessionID: "s1"}
	_, trace := p.Explain(ctx, d)
	if !strings.Contains(strings.Join(trace, "\n"), "route rule route-14: deny side matches; none of [@tool:never_14]") {
		t.Errorf("got trace %q, want route-8 checked", trace)
	}
}

// BenchmarkDecideRead: a read of a listed item, and one of the client's
// making on an upstream no route rule closes (the route-rule test runs:
// tool_2029 is a sink route-14 governs, its after side not remembered).
func BenchmarkDecideRead(b *testing.B) {
	p := benchPolicy(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name    string
		carries bool
	}{{"listed", false}, {"carries_open", true}} {
		d := &intercept.ActionDescriptor{Method: "resources/read", ToolName: "resource:file:///srv/a", Upstream: "files", Agent: "bench", SessionID: "s1",
			Parameters: jsontext.Value(`{}`), ReadCarries: bc.carries, UpstreamTools: []string{"tool_2", "tool_2029"}}
		if got, _ := p.Decide(ctx, d); got.Verdict != intercept.Allow {
			b.Fatalf("%s: got %s (%s), want allow", bc.name, got.Verdict, got.Reason)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(ctx, d)
			}
		})
	}
}

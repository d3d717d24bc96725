package policy

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

var (
	_ intercept.ToolFilter = (*Policy)(nil)
	_ intercept.ToolFilter = (*Watcher)(nil)
)

// Visible implements intercept.ToolFilter: it reports false when every
// call of d's tool by d's agent on d's upstream is denied, whatever the
// arguments, the route memory or the classifier say. That is so when the
// name is a look-alike of a configured one, when the agent's manifest
// forbids the tool's classes (or its having none), when a deny rule
// without a condition matches the tool, or when the default is deny and no
// allow or require_approval rule can match the tool at all. Everything
// else — conditions, route rules, the boundary ceiling (which rests on
// what the call declares) — might allow a call and leaves the tool
// visible, as does a panic. A nil *Policy denies everything and shows
// nothing.
func (p *Policy) Visible(ctx context.Context, d *intercept.ActionDescriptor) (ok bool) {
	if p == nil {
		return false
	}
	if d == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	name, _, reserved := actionName(d)
	if reserved {
		return false
	}
	classes, known := p.lookup(d.Upstream, name)
	if !known && !p.names[name] && len(p.looks) > 0 {
		if _, like := p.looks[skeleton(name)]; like {
			return false
		}
	}
	if len(p.manifests) > 0 {
		m := p.manifests[nfc(d.Agent)]
		if m == nil {
			m = p.manifests[anyAgent]
		}
		if m != nil && m.hasList && !allAllowed(m.allowed, classes) {
			return false
		}
	}
	var buf [12]source
	srcs := p.sources(buf[:0], d.Upstream, name, classes)
	if p.anyRule(slotDeny, srcs, d.Upstream, name, classes, true) {
		return false
	}
	if p.def == intercept.Allow {
		return true
	}
	return p.anyRule(slotApproval, srcs, d.Upstream, name, classes, false) ||
		p.anyRule(slotAllow, srcs, d.Upstream, name, classes, false)
}

// allAllowed reports whether a manifest's allowed classes let a tool with
// classes through, as checkManifest does: a tool without a class never.
func allAllowed(allowed, classes []string) bool {
	if len(classes) == 0 {
		return false
	}
	for _, c := range classes {
		if !containsString(allowed, c) {
			return false
		}
	}
	return true
}

// anyRule reports whether a rule of a verdict slot matches the tool; with
// unconditional, only a rule without a condition counts.
func (p *Policy) anyRule(slot int, srcs []source, upstream, name string, classes []string, unconditional bool) bool {
	for _, src := range srcs {
		for _, i := range src.s[slot] {
			r := p.rules[i]
			if unconditional && r.when != nil {
				continue
			}
			if r.m.matches(upstream, name, classes) {
				return true
			}
		}
	}
	return false
}

// Visible implements intercept.ToolFilter with the current policy.
func (w *Watcher) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return w.cur.Load().Visible(ctx, d)
}

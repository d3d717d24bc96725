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
	name, read, reserved := actionName(d)
	if reserved {
		return false
	}
	classes, known := p.lookup(d.Upstream, name)
	if !read && !known && !p.names[name] && len(p.looks) > 0 {
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
	act := &activation{tool: name, upstream: d.Upstream, agent: nfc(d.Agent), classes: classes, principal: d.Principal, clientName: d.ClientName}
	if p.anyRule(ctx, slotDeny, srcs, act, true) {
		return false
	}
	def := p.def
	if read {
		def = p.defRead // as Decide: reads no rule decides follow default_read
	}
	if def == intercept.Allow {
		return true
	}
	return p.anyRule(ctx, slotApproval, srcs, act, false) ||
		p.anyRule(ctx, slotAllow, srcs, act, false)
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

// anyRule reports whether a rule of a verdict slot matches the tool of
// act. With sure, only a rule that matches every call of the tool counts:
// no condition, or one that reads only what act holds (agent, tool,
// upstream, classes, principal) and holds. Without sure, a rule that may
// match counts: a condition that reads only act and does not hold rules
// it out; any other condition, or an error, leaves it in.
func (p *Policy) anyRule(ctx context.Context, slot int, srcs []source, act *activation, sure bool) bool {
	for _, src := range srcs {
		for _, i := range src.s[slot] {
			r := p.rules[i]
			if !r.m.matches(act.upstream, act.tool, act.classes) {
				continue
			}
			if r.when == nil {
				return true
			}
			if !r.when.static {
				if !sure {
					return true
				}
				continue
			}
			holds, err := r.when.eval(ctx, act)
			switch {
			case err != nil:
				if !sure {
					return true
				}
			case holds:
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

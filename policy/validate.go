package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/intercept"
)

// Warning codes.
const (
	WarnUnreachableRule  = "unreachable_rule"
	WarnUnknownClass     = "unknown_class"
	WarnUnclassifiedTool = "unclassified_tool"
	WarnRouteNeverMatch  = "route_never_matches"
	WarnLookalikeNames   = "lookalike_names"
	// WarnClassifierDeny: a deny rule whose condition reads
	// classification.*. The classifier may never deny alone (RFC-010
	// §12.3): when such a deny rests only on the classification, the
	// gateway logs CLASSIFIER_SOLE_DENY_VIOLATION and decides without it.
	WarnClassifierDeny = "classifier_sole_deny"
	// WarnNumberGuard: a deny or require_approval rule whose condition
	// names some number types but not all three, as a guard such as
	// type(args.amount) in [int, double] does: a number of the type left
	// out (an integer above int64 is a uint, 1e4 and 5000.5 doubles)
	// fails the guard and the rule does not apply.
	WarnNumberGuard = "number_guard_misses_type"
)

// A Warning is something legal in a policy that is probably a mistake.
type Warning struct {
	File   string
	Line   int
	Column int
	Path   string
	Code   string // one of the Warn constants
	Msg    string
}

func (w Warning) String() string {
	var b strings.Builder
	b.WriteString(w.File)
	if w.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", w.Line, w.Column)
	}
	if w.Path != "" {
		b.WriteString(": " + w.Path)
	}
	fmt.Fprintf(&b, ": warning: %s (%s)", w.Msg, w.Code)
	return b.String()
}

// Validate returns the warnings of `sluice policy validate`, in file
// order: rules that can never decide because a rule without a condition
// covers every call they match with a stronger (or, earlier, the same)
// decision; classes used by rules, route rules or manifests that no tool
// has; tools named in rules that have no class while the policy uses
// classes; route rules one of whose sides can never match; deny and
// approval rules whose conditions name some number types but not all
// three; and configured tool names that look alike.
func (p *Policy) Validate() []Warning {
	var ws []Warning
	warn := func(at pos, code, format string, args ...any) {
		ws = append(ws, Warning{File: p.file, Line: at.line, Column: at.col, Path: at.path, Code: code, Msg: fmt.Sprintf(format, args...)})
	}

	for _, r := range p.rules {
		if r.slot == slotDeny && r.when != nil && r.when.classification {
			warn(r.at, WarnClassifierDeny, "deny rule %s reads classification.*: the classifier may never deny alone; where the deny rests only on it the gateway logs CLASSIFIER_SOLE_DENY_VIOLATION and decides without it (use require_approval, or add a deterministic condition)", r.id)
		}
	}
	for _, r := range p.rules {
		if r.slot == slotAllow || r.when == nil || len(r.when.numberTypes) == 0 || len(r.when.numberTypes) == 3 {
			continue
		}
		var missing []string
		for _, t := range [...]string{"int", "uint", "double"} {
			if !slices.Contains(r.when.numberTypes, t) {
				missing = append(missing, t)
			}
		}
		warn(r.at, WarnNumberGuard, "%s rule %s names the number types %s but not %s: JSON numbers arrive as any of int, uint (an integer above 9223372036854775807) and double (1e4, 5000.5), and a guard that skips one lets such a number through, which the upstream reads as a number all the same; write type(x) in [int, uint, double]", slotVerdict[r.slot], r.id, strings.Join(r.when.numberTypes, ", "), strings.Join(missing, ", "))
	}
	for j, r := range p.rules {
		for i, d := range p.rules {
			if i == j || d.when != nil || d.slot > r.slot || (d.slot == r.slot && i > j) || !p.covers(&d.m, &r.m) {
				continue
			}
			if d.slot == r.slot {
				warn(r.at, WarnUnreachableRule, "rule %s never decides: rule %s (line %d) comes first, has no condition and matches every call it matches", r.id, d.id, d.at.line)
			} else {
				warn(r.at, WarnUnreachableRule, "rule %s (%s) is unreachable: rule %s (%s, line %d) has no condition and matches every call it matches, and %s beats %s", r.id, slotVerdict[r.slot], d.id, slotVerdict[d.slot], d.at.line, slotVerdict[d.slot], slotVerdict[r.slot])
			}
			break
		}
	}

	given := map[string]bool{}
	for _, cs := range p.classes {
		for _, c := range cs {
			given[c] = true
		}
	}
	unknown := func(at pos, what string, cs ...[]string) {
		for _, l := range cs {
			for _, c := range l {
				if !given[c] {
					warn(at, WarnUnknownClass, "%s uses class %s, which no tool in tool_classes has", what, c)
				}
			}
		}
	}
	for _, r := range p.rules {
		unknown(r.at, "rule "+r.id, r.m.anyOf, r.m.allOf)
	}
	for _, r := range p.routes {
		unknown(r.at, "route rule "+r.id, r.after.anyOf, r.after.allOf, r.deny.anyOf, r.deny.allOf)
	}
	for _, m := range sortedManifests(p) {
		unknown(m.at, "the manifest of "+m.agent, m.allowed)
	}

	if len(p.classes) > 0 || len(p.routes) > 0 || len(p.manifests) > 0 {
		classified := map[string]bool{}
		for k := range p.classes {
			classified[k.tool] = true
		}
		reported := map[string]bool{}
		// A carry (mcp:METHOD) is decided only by rules naming it:
		// no class would make class rules see it.
		carry := func(t string) bool { return strings.HasPrefix(t, intercept.CarryPrefix) }
		check := func(at pos, m *matcher) {
			for _, t := range m.tools {
				if !classified[t] && !reported[t] && !carry(t) {
					reported[t] = true
					warn(at, WarnUnclassifiedTool, "tool %s has no class in tool_classes, so class rules, route rules and manifests cannot see it", t)
				}
			}
			for _, k := range m.pinned {
				if _, ok := p.lookup(k.upstream, k.tool); !ok && !reported[k.String()] && !carry(k.tool) {
					reported[k.String()] = true
					warn(at, WarnUnclassifiedTool, "tool %s has no class in tool_classes, so class rules, route rules and manifests cannot see it", k)
				}
			}
		}
		for _, r := range p.rules {
			check(r.at, &r.m)
		}
		for _, r := range p.routes {
			check(r.at, &r.after)
			check(r.at, &r.deny)
		}
	}

	for _, r := range p.routes {
		if !p.canMatch(&r.after, false) {
			warn(r.at, WarnRouteNeverMatch, "route rule %s can never apply: no tool in tool_classes matches its after side", r.id)
		}
		if !p.canMatch(&r.deny, true) {
			warn(r.at, WarnRouteNeverMatch, "route rule %s can never apply: no tool in tool_classes matches its deny side", r.id)
		}
	}

	bySkel := map[string][]string{}
	for n := range p.names {
		sk := skeleton(n)
		bySkel[sk] = append(bySkel[sk], n)
	}
	for _, ns := range bySkel {
		if len(ns) > 1 {
			slices.Sort(ns)
			warn(pos{}, WarnLookalikeNames, "the configured tool names %s look alike; calls to each match exactly, but a reader will confuse them", strings.Join(ns, ", "))
		}
	}

	slices.SortStableFunc(ws, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Msg, b.Msg))
	})
	return ws
}

func sortedManifests(p *Policy) []*manifest {
	out := make([]*manifest, 0, len(p.manifests))
	for _, m := range p.manifests {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *manifest) int { return cmp.Compare(a.agent, b.agent) })
	return out
}

// covers reports whether every call r matches is also matched by d. It is
// conservative: false means "not shown", not "no".
func (p *Policy) covers(d, r *matcher) bool {
	if len(d.upstreams) > 0 {
		switch {
		case len(r.upstreams) > 0:
			if !subset(r.upstreams, d.upstreams) {
				return false
			}
		case len(r.pinned) > 0 && len(r.tools) == 0:
			for _, k := range r.pinned {
				if !slices.Contains(d.upstreams, k.upstream) {
					return false
				}
			}
		default:
			return false
		}
	}
	if len(d.tools)+len(d.pinned) > 0 {
		if len(r.tools)+len(r.pinned) == 0 {
			return false
		}
		for _, t := range r.tools {
			if !slices.Contains(d.tools, t) {
				return false
			}
		}
		for _, k := range r.pinned {
			if !slices.Contains(d.tools, k.tool) && !slices.Contains(d.pinned, k) {
				return false
			}
		}
	}
	sets, named := p.classSets(r)
	if len(d.anyOf) > 0 {
		ok := containsAny(r.allOf, d.anyOf) || (len(r.anyOf) > 0 && subset(r.anyOf, d.anyOf))
		if !ok && named {
			ok = true
			for _, cs := range sets {
				ok = ok && containsAny(cs, d.anyOf)
			}
		}
		if !ok {
			return false
		}
	}
	if len(d.allOf) > 0 && !subset(d.allOf, r.allOf) {
		if !named {
			return false
		}
		for _, cs := range sets {
			if !subset(d.allOf, cs) {
				return false
			}
		}
	}
	return true
}

// classSets returns every class list a call matched by m can have, when m
// names its tools; named is false when it does not.
func (p *Policy) classSets(m *matcher) (sets [][]string, named bool) {
	if len(m.tools)+len(m.pinned) == 0 {
		return nil, false
	}
	for _, t := range m.tools {
		sets = append(sets, p.classes[toolKey{tool: t}]) // nil: unclassified
		for k, cs := range p.classes {
			if k.tool == t && k.upstream != "" && (len(m.upstreams) == 0 || slices.Contains(m.upstreams, k.upstream)) {
				sets = append(sets, cs)
			}
		}
	}
	for _, k := range m.pinned {
		cs, _ := p.lookup(k.upstream, k.tool)
		sets = append(sets, cs)
	}
	return sets, true
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// canMatch reports whether some classified tool can satisfy m's class
// conditions. A matcher without classes can always match (any tool may be
// called). sameCall says whether match_all_classes must hold in one call
// (deny side) or may be gathered over several (after side).
func (p *Policy) canMatch(m *matcher, sameCall bool) bool {
	if len(m.anyOf)+len(m.allOf) == 0 {
		return true
	}
	// On the after side each condition is met by its own call, so only
	// the deny side ties classes to the named tools and upstreams.
	fits := func(k toolKey, cs []string, need []string, any bool) bool {
		if sameCall && len(m.tools)+len(m.pinned) > 0 && !slices.Contains(m.tools, k.tool) && !slices.Contains(m.pinned, k) {
			return false
		}
		if sameCall && len(m.upstreams) > 0 && k.upstream != "" && !slices.Contains(m.upstreams, k.upstream) {
			return false
		}
		if any {
			return containsAny(cs, need)
		}
		return subset(need, cs)
	}
	some := func(need []string, any bool) bool {
		for k, cs := range p.classes {
			if fits(k, cs, need, any) {
				return true
			}
		}
		return false
	}
	if sameCall {
		for k, cs := range p.classes {
			if fits(k, cs, m.allOf, false) && (len(m.anyOf) == 0 || containsAny(cs, m.anyOf)) {
				return true
			}
		}
		return false
	}
	if len(m.anyOf) > 0 && !some(m.anyOf, true) {
		return false
	}
	for _, c := range m.allOf {
		if !some([]string{c}, false) {
			return false
		}
	}
	return true
}

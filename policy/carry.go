package policy

import (
	"context"
	"errors"
	"strings"

	"github.com/sluicehq/sluice/intercept"
)

// Carries (intercept's carry.go): a client message that is not an action
// but carries data of the client's choosing to an upstream — a
// completion, a subscription, a paged list with a cursor the upstream
// never gave it, a progress notification, an unknown method, the client's
// answer to the upstream's sampling or elicitation — decided under the
// name mcp:METHOD (mcp:response for an answer), with {"method", "params"}
// as arguments.
//
// The upstream gets these bytes as surely as it gets a tool's arguments,
// so a route rule that closes the upstream closes it to them: a carry is
// denied when a route rule whose after side is in route memory has a deny
// side that matches the upstream itself (upstream:, or the carry's name)
// or any tool of the upstream — by name or by the classes tool_classes
// gives it there — or a read tool_classes pins to it (web/resource:https://*
// makes a fetch server's reads its sinks; a read no upstream is pinned
// to could be any upstream's, and closes none). The upstream's tools are
// those it listed through the gateway; before it has listed any, every
// tool tool_classes or a rule names (pinned to it or to no upstream) counts, so a carry fails closed
// rather than pass for want of a list. This is the rule an operator
// already wrote (no_sink_after_sensitive_source closes the server that
// offers web_search), with nothing new to write.
//
// Only rules that name a carry (match_tool: mcp:completion/complete, or
// pinned docs/mcp:completion/complete, and the shorthand lists) otherwise
// decide it; class-, upstream- and catch-all rules, and manifests, are
// about tools and their arguments (a condition reading args.url would
// fail on every completion). A carry no rule decides is allowed
// (carry_allow), whatever default says: these messages were never actions
// to allow one by one, a client must be able to complete and subscribe on
// an upstream it may use, and what closes an upstream to data is route
// memory.
//
// A read that carries (intercept.ActionDescriptor.ReadCarries: a URI or
// prompt the upstream did not list to the client, a prompt's arguments)
// is decided as a read, except that the same route-rule test comes first
// among the allows: once a route rule closes its upstream it is denied as
// a carry is, whatever rule or default_read would allow it.

// ReasonCarryAllow allows a carry no rule decides and no route rule
// closes.
const ReasonCarryAllow = "carry_allow"

// decideCarry decides st.d, a carry (see above).
func (p *Policy) decideCarry(st *state) intercept.Decision {
	d, tr := st.d, st.tr
	if tr != nil {
		tr.add("carry: %s to upstream %q, agent %q, session %q: data of the client's for the upstream, not a tool call", st.name, d.Upstream, d.Agent, d.SessionID)
	}
	var buf [2]source
	srcs := buf[:0]
	if s := p.idx.bare[st.name]; s != nil {
		srcs = append(srcs, source{s: s, via: viaTool})
	}
	if s := p.idx.pinned[toolKey{d.Upstream, st.name}]; s != nil {
		srcs = append(srcs, source{s: s, via: viaPinned})
	}
	if i, err := p.scanRules(slotDeny, srcs, st); i >= 0 {
		return p.ruleDecision(p.rules[i], err, st)
	}
	if len(p.routes) > 0 {
		if dec, closed := p.carryRoutes(st); closed {
			return dec
		}
	}
	for _, slot := range [...]int{slotApproval, slotAllow} {
		if i, err := p.scanRules(slot, srcs, st); i >= 0 {
			return p.ruleDecision(p.rules[i], err, st)
		}
	}
	if tr != nil {
		tr.add("no rule names %s and no route rule closes upstream %q; a carry is allowed", st.name, d.Upstream)
	}
	return p.decision(intercept.Allow, ReasonCarryAllow, "no route rule closes this upstream to the client", "", "", p.mode, st)
}

// carryRoutes finds the first route rule, in file order, that closes the
// upstream of st's carry (see above) and whose after side is remembered.
// closed is false when none does.
func (p *Policy) carryRoutes(st *state) (dec intercept.Decision, closed bool) {
	up := st.d.Upstream
	var buf [32]string
	via := buf[:0] // the name each rule matched, "" for none
	if len(p.routes) > len(buf) {
		via = make([]string, 0, len(p.routes))
	}
	via = via[:len(p.routes)]
	left := len(p.routes)
	match := func(name string, classes []string) {
		for i, r := range p.routes {
			if via[i] == "" && r.deny.matches(up, name, classes) {
				via[i] = name
				left--
			}
		}
	}
	match(st.name, nil)
	seen := func(name string) {
		if left == 0 || strings.HasPrefix(name, intercept.ResourcePrefix) || strings.HasPrefix(name, intercept.PromptPrefix) {
			return
		}
		classes, _ := p.lookup(up, name)
		match(name, classes)
	}
	for _, t := range p.pinnedTools[up] {
		if isRead(t) {
			// A read pinned to the upstream is its own as surely as a
			// tool is: a server whose sink is its reads (a fetch
			// server's resource:https://…) is closed by them.
			classes, _ := p.lookup(up, t)
			match(t, classes)
			continue
		}
		seen(t)
	}
	for _, pc := range p.prefixes {
		if pc.upstream == up {
			match(pc.prefix+"*", pc.classes)
		}
	}
	if st.d.UpstreamTools != nil {
		for _, t := range st.d.UpstreamTools {
			seen(nfc(t))
		}
	} else {
		// Not listed here yet: whatever the policy names may be its.
		for _, t := range p.bareTools {
			seen(t)
		}
		for n := range p.names {
			seen(n)
		}
	}
	for i, r := range p.routes {
		if via[i] == "" {
			continue
		}
		hit, err := p.remembered(r, st)
		switch {
		case errors.Is(err, ErrEvicted):
			return p.decision(intercept.Deny, ReasonRouteEvicted, "the gateway's memory of what this "+string(r.scope)+" read before was evicted to stay within its bounds, so data cannot be sent to an upstream that route rule "+r.id+" governs", r.id, r.id, r.mode, st), true
		case err != nil:
			return p.failed(st, r.id, r.id, r.mode), true
		case hit:
			if st.tr != nil {
				st.tr.add("route rule %s closes upstream %q (through %s): the carry is denied", r.id, up, via[i])
			}
			public := r.public + " (route rule " + r.id + " closed upstream " + up + ", through " + via[i] + "; this message would carry data to it)"
			return p.decision(intercept.Deny, ReasonRouteDeny, public, r.id, r.id, intercept.ModeThrow, st), true
		}
	}
	return intercept.Decision{}, false
}

var (
	_ intercept.RouteCloser = (*Policy)(nil)
	_ intercept.RouteCloser = (*Watcher)(nil)
)

// Closes implements intercept.RouteCloser with the test a carry is denied
// by (carryRoutes): a route rule whose after side is remembered closes d's
// upstream (itself, d's carry name, or one of its tools). A memory that
// was evicted or cannot be read, a panic and a nil *Policy (which denies
// everything) close it. Without route rules it costs nothing.
func (p *Policy) Closes(ctx context.Context, d *intercept.ActionDescriptor) (closed bool) {
	if p == nil || d == nil {
		return true
	}
	if len(p.routes) == 0 {
		return false
	}
	defer func() {
		if recover() != nil {
			closed = true
		}
	}()
	_, closed = p.carryRoutes(&state{ctx: ctx, d: d, name: nfc(d.ToolName)})
	return closed
}

// Closes implements intercept.RouteCloser with the current policy.
func (w *Watcher) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return w.cur.Load().Closes(ctx, d)
}

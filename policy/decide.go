package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// Reason codes of the decisions a Policy makes. Decision.Reason and
// Evidence.ReasonCode both carry one; the rule's own `reason` text becomes
// the public reason unless `public_reason` is set.
const (
	ReasonRuleAllow        = "rule_allow"
	ReasonRuleDeny         = "rule_deny"
	ReasonApprovalRequired = "approval_required"
	ReasonRouteDeny        = "route_rule_deny"
	// ReasonRouteEvicted denies a call a route rule governs when the route
	// memory it needs was evicted to stay within bounds (ErrEvicted): an
	// agent whose history was forgotten is not treated as clean.
	ReasonRouteEvicted     = "route_memory_evicted"
	ReasonManifestClass    = "manifest_class_not_allowed"
	ReasonManifestBoundary = "manifest_boundary_exceeded"
	ReasonLookalike        = "tool_name_lookalike"
	ReasonDefaultDeny      = "default_deny"
	ReasonDefaultAllow     = "default_allow"
	// ReasonReservedName denies a tools/call whose tool name starts with
	// resource: or prompt:, names policy gives to reads.
	ReasonReservedName = "tool_name_reserved"
)

// trace collects the steps of a decision for Explain. A nil *trace
// records nothing; every call site checks for nil first so that the
// arguments are not even built on the Decide path.
type trace struct{ lines []string }

func (t *trace) add(format string, args ...any) {
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// state is what one decision knows about its call.
type state struct {
	ctx     context.Context
	d       *intercept.ActionDescriptor
	name    string   // the tool name in NFC
	classes []string // shared with the policy: never modified
	now     time.Time
	act     *activation // built when the first condition is evaluated
	argsErr error
	tr      *trace
}

func (st *state) clock(p *Policy) time.Time {
	if st.now.IsZero() {
		st.now = p.now()
	}
	return st.now
}

// Decide implements intercept.Decider. It never returns an error: a
// condition that fails, a route memory that cannot be read or a panic is a
// deny with reason policy_error, carrying the policy version.
func (p *Policy) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	return p.decide(ctx, d, nil), nil
}

// Explain decides like Decide and also returns the steps that led there,
// for `sluice policy explain`. It reads route memory but does not write
// it.
func (p *Policy) Explain(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, []string) {
	tr := &trace{}
	dec := p.decide(ctx, d, tr)
	tr.add("decision: %s, reason %s, rule %q, result_mode %s, policy %s", dec.Verdict, dec.Reason, dec.RuleID, dec.Mode, shortVersion(dec.PolicyVersion))
	return dec, tr.lines
}

func shortVersion(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

var notConfigured = intercept.Decision{
	Verdict:      intercept.Deny,
	Reason:       intercept.ReasonPolicyNotConfigured,
	PublicReason: "no policy is configured for this tool call",
	Mode:         intercept.ModeThrow,
	Evidence:     intercept.Evidence{ReasonCode: intercept.ReasonPolicyNotConfigured},
}

func (p *Policy) decide(ctx context.Context, d *intercept.ActionDescriptor, tr *trace) (dec intercept.Decision) {
	if p == nil {
		return notConfigured
	}
	if d == nil {
		return p.failed(nil, "", "", p.mode)
	}
	defer func() {
		if r := recover(); r != nil {
			if tr != nil {
				tr.add("panic while deciding: %v", r)
			}
			dec = p.failed(nil, "", "", p.mode)
			dec.Evidence.MatchedToolName = d.ToolName
		}
	}()
	name, read, reserved := actionName(d)
	st := state{ctx: ctx, d: d, name: name, tr: tr}
	if d.IsCarry() {
		return p.decideCarry(&st)
	}
	if reserved {
		if tr != nil {
			tr.add("tool %q: names starting with %s, %s or %s are reserved for reads and carries; denied", d.ToolName, intercept.ResourcePrefix, intercept.PromptPrefix, intercept.CarryPrefix)
		}
		return p.decision(intercept.Deny, ReasonReservedName, "tool names starting with resource:, prompt: or mcp: are reserved by the gateway's policy for resources, prompts and other messages", "", "", p.mode, &st)
	}
	classes, known := p.lookup(d.Upstream, st.name)
	st.classes = classes
	if tr != nil {
		tr.add("call: tool %q on upstream %q, agent %q, session %q", d.ToolName, d.Upstream, d.Agent, d.SessionID)
		if st.name != d.ToolName {
			tr.add("the name is %q after NFC normalisation", st.name)
		}
		if classes != nil {
			tr.add("classes: %v", classes)
		} else if d.Upstream != "" {
			tr.add("classes: none (%s is not in tool_classes under %s/%s or %s)", st.name, d.Upstream, st.name, st.name)
		} else if keys := p.upstreamKeys(st.name); len(keys) > 0 {
			// tool_classes names the tool only under an upstream, which a
			// call naming none does not match: say which, or the operator
			// reads "none" for a tool the gateway does class.
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k.String()
			}
			tr.add("classes: none (%s is in tool_classes only as %s, and this call names no upstream: give one, as policy explain --upstream %s)", st.name, strings.Join(names, ", "), keys[0].upstream)
		} else {
			tr.add("classes: none (%s is not in tool_classes)", st.name)
		}
	}

	if !read && !known && !p.names[st.name] && len(p.looks) > 0 {
		if like, ok := p.looks[skeleton(st.name)]; ok {
			if tr != nil {
				tr.add("look-alike: %q is not a configured tool name but cannot be told apart from %q; denied as a finding", st.name, like)
			}
			return p.decision(intercept.Deny, ReasonLookalike, "the tool name looks like a configured tool's name but is not it", "", "", p.mode, &st)
		}
	}

	if len(p.manifests) > 0 {
		m := p.manifests[nfc(d.Agent)]
		if m == nil {
			m = p.manifests[anyAgent]
		}
		if m != nil {
			if dec, denied := p.checkManifest(m, &st); denied {
				return dec
			}
		}
	}

	var buf [12]source
	srcs := p.sources(buf[:0], d.Upstream, st.name, st.classes)
	if i, err := p.scanRules(slotDeny, srcs, &st); i >= 0 {
		return p.ruleDecision(p.rules[i], err, &st)
	}
	if len(p.routes) > 0 {
		if i, err := p.scanRoutes(srcs, &st); i >= 0 {
			r := p.routes[i]
			if errors.Is(err, ErrEvicted) {
				return p.decision(intercept.Deny, ReasonRouteEvicted, "the gateway's memory of what this "+string(r.scope)+" read before was evicted to stay within its bounds, so a call that route rule "+r.id+" governs cannot be allowed", r.id, r.id, r.mode, &st)
			}
			if err != nil {
				if tr == nil {
					p.memoryFailed(0, "policy: cannot read route memory; calls its route rules govern are denied (policy_error)",
						"rule", r.id, "tool", d.ToolName, "err", err)
				}
				return p.failed(&st, r.id, r.id, r.mode)
			}
			return p.decision(intercept.Deny, ReasonRouteDeny, r.public, r.id, r.id, r.mode, &st)
		}
		if (read && d.ReadCarries) || (!read && d.CallCarries) {
			// A read of the client's making (a URI the upstream did not
			// list, a prompt's arguments), or a call with bytes of the
			// client's beside its arguments (its answers to the
			// upstream's questions), is closed with its upstream, as a
			// carry is (carry.go); a read of a listed item is not.
			if dec, closed := p.carryRoutes(&st); closed {
				return dec
			}
		}
	}
	for _, slot := range [...]int{slotApproval, slotAllow} {
		if i, err := p.scanRules(slot, srcs, &st); i >= 0 {
			return p.ruleDecision(p.rules[i], err, &st)
		}
	}
	def := p.def
	if read {
		def = p.defRead
	}
	if tr != nil {
		if read {
			tr.add("no rule applies; the default for reads (default_read) is %s", def)
		} else {
			tr.add("no rule applies; the default is %s", def)
		}
	}
	if def == intercept.Allow {
		return p.decision(intercept.Allow, ReasonDefaultAllow, "no rule applies; the policy allows by default", "", "", p.mode, &st)
	}
	return p.decision(intercept.Deny, ReasonDefaultDeny, "no rule allows this call; the policy denies by default", "", "", p.mode, &st)
}

// lookup returns a tool's classes, pinned entry first, and whether the
// tool is in tool_classes at all.
// upstreamKeys lists, by upstream, the keys of tool_classes that name the
// tool under an upstream.
func (p *Policy) upstreamKeys(name string) []toolKey {
	var keys []toolKey
	for k := range p.classes {
		if k.upstream != "" && k.tool == name {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b toolKey) int { return strings.Compare(a.upstream, b.upstream) })
	return keys
}

func (p *Policy) lookup(upstream, name string) ([]string, bool) {
	if cs, ok := p.classes[toolKey{upstream, name}]; ok && upstream != "" {
		return cs, true
	}
	if cs, ok := p.classes[toolKey{tool: name}]; ok {
		return cs, true
	}
	if len(p.prefixes) > 0 && isRead(name) {
		return p.lookupPrefix(upstream, name)
	}
	return nil, false
}

func (p *Policy) decision(v intercept.Verdict, code, public, ruleID, routeID string, mode intercept.ResultMode, st *state) intercept.Decision {
	return intercept.Decision{
		Verdict:       v,
		Reason:        code,
		PublicReason:  public,
		Mode:          mode,
		PolicyVersion: p.version,
		RuleID:        ruleID,
		Evidence: intercept.Evidence{
			MatchedToolName:    st.name,
			MatchedToolClasses: st.classes,
			MatchedRouteRuleID: routeID,
			ReasonCode:         code,
		},
	}
}

// failed is the policy_error deny. st may be nil.
func (p *Policy) failed(st *state, ruleID, routeID string, mode intercept.ResultMode) intercept.Decision {
	if st == nil {
		st = &state{}
	}
	return p.decision(intercept.Deny, intercept.ReasonPolicyError, "the policy could not be evaluated for this call", ruleID, routeID, mode, st)
}

func (p *Policy) ruleDecision(r *rule, err error, st *state) intercept.Decision {
	if err != nil {
		return p.failed(st, r.id, "", r.mode)
	}
	return p.decision(slotVerdict[r.slot], r.code, r.public, r.id, "", r.mode, st)
}

// scanRules finds the first rule of a verdict slot, in file order, whose
// matcher matches and whose condition holds or fails. It returns -1 when
// none does; err is the failure of the returned rule's condition.
func (p *Policy) scanRules(slot int, srcs []source, st *state) (int32, error) {
	best, bestErr := int32(-1), error(nil)
	for _, src := range srcs {
		for _, i := range src.s[slot] {
			if best >= 0 && i >= best {
				break
			}
			r := p.rules[i]
			if src.duplicate(&r.m, st.name, st.classes) || !r.m.matches(st.d.Upstream, st.name, st.classes) {
				continue
			}
			hit, err := true, error(nil)
			if r.when != nil {
				hit, err = p.evalWhen(r, st)
			}
			if st.tr != nil {
				st.tr.add("%s", ruleTrace(r, hit, err))
			}
			if hit || err != nil {
				best, bestErr = i, err
				break
			}
		}
	}
	return best, bestErr
}

func ruleTrace(r *rule, hit bool, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rule %s (%s, %s line %d): matcher matches", r.id, slotVerdict[r.slot], r.at.path, r.at.line)
	if r.when != nil {
		switch {
		case err != nil:
			fmt.Fprintf(&b, "; when %q failed: %v (policy_error)", r.when.src, err)
		case hit:
			fmt.Fprintf(&b, "; when %q is true", r.when.src)
		default:
			fmt.Fprintf(&b, "; when %q is false", r.when.src)
		}
	}
	if (hit || err != nil) && r.reason != "" {
		fmt.Fprintf(&b, "; reason: %s", r.reason)
	}
	return b.String()
}

func (p *Policy) evalWhen(r *rule, st *state) (bool, error) {
	if st.act == nil {
		args, err := decodeArgs(st.d.Parameters)
		st.act = &activation{args: args, tool: st.name, upstream: st.d.Upstream, agent: nfc(st.d.Agent), session: st.d.SessionID, classes: st.classes, classification: st.d.Classification, principal: st.d.Principal, clientName: st.d.ClientName}
		st.argsErr = err
	}
	if st.argsErr != nil {
		return false, st.argsErr
	}
	if r.when.reads != nil {
		if err := r.when.caseVariant(st.act.args); err != nil {
			return false, err
		}
	}
	hit, err := r.when.eval(st.ctx, st.act)
	if err != nil && r.when.classification && st.d.Classification[ClassificationWithheld] == true {
		// Re-evaluation without the classifier's attributes (RFC-010
		// §12.3): a condition that needs them does not hold. But only an
		// error of theirs: with neutral stand-ins for every attribute the
		// condition must evaluate; an error of the arguments' own (a
		// string where a number was written) stays an error, and denies.
		probe := *st.act
		probe.classification = neutralClassification(st.act.classification)
		if _, perr := r.when.eval(st.ctx, &probe); perr != nil {
			return false, err
		}
		return false, nil
	}
	return hit, err
}

// scanRoutes finds the first route rule whose deny side matches the call
// and whose after side is in route memory.
func (p *Policy) scanRoutes(srcs []source, st *state) (int32, error) {
	best, bestErr := int32(-1), error(nil)
	for _, src := range srcs {
		for _, i := range src.s[slotRoute] {
			if best >= 0 && i >= best {
				break
			}
			r := p.routes[i]
			if src.duplicate(&r.deny, st.name, st.classes) || !r.deny.matches(st.d.Upstream, st.name, st.classes) {
				continue
			}
			hit, err := p.remembered(r, st)
			if hit || err != nil {
				best, bestErr = i, err
				break
			}
		}
	}
	return best, bestErr
}

func (p *Policy) remembered(r *routeRule, st *state) (bool, error) {
	// The agent as its manifest knows it (NFC): one agent, one memory,
	// whichever spelling of its name the client sends
	// (TestAttackRouteMemoryAgentNFD).
	k := MemoryKey(r.scope, p.memoryAgent(st.d), st.d.SessionID)
	var since time.Time
	if r.window > 0 {
		since = st.clock(p).Add(-r.window)
	}
	for _, g := range r.groups {
		seen, err := p.store.Seen(st.ctx, k, g, since)
		if errors.Is(err, ErrEvicted) {
			if st.tr != nil {
				st.tr.add("route rule %s: deny side matches; none of %v is in route memory %s%s, but that memory was evicted and may have held one (route_memory_evicted)", r.id, g, k, sinceText(since))
			}
			return false, err
		}
		if err != nil {
			if st.tr != nil {
				st.tr.add("route rule %s: deny side matches; route memory %s cannot be read: %v (policy_error)", r.id, k, err)
			}
			return false, err
		}
		if !seen {
			if st.tr != nil {
				st.tr.add("route rule %s: deny side matches; none of %v is in route memory %s%s", r.id, g, k, sinceText(since))
			}
			return false, nil
		}
	}
	if st.tr != nil {
		st.tr.add("route rule %s: deny side matches and the after side is in route memory %s%s; reason: %s", r.id, k, sinceText(since), r.reason)
	}
	return true, nil
}

func sinceText(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return " since " + since.UTC().Format(time.RFC3339)
}

func (p *Policy) checkManifest(m *manifest, st *state) (intercept.Decision, bool) {
	if m.hasList {
		if len(st.classes) == 0 {
			if st.tr != nil {
				st.tr.add("manifest of %q: the tool has no class, and the manifest allows only %v", m.agent, m.allowed)
			}
			return p.decision(intercept.Deny, ReasonManifestClass, "this agent's manifest does not allow tools without a class", "", "", p.mode, st), true
		}
		for _, c := range st.classes {
			if !containsString(m.allowed, c) {
				if st.tr != nil {
					st.tr.add("manifest of %q: class %s is not in allowed_classes %v", m.agent, c, m.allowed)
				}
				return p.decision(intercept.Deny, ReasonManifestClass, "this agent's manifest does not allow tools of class "+c, "", "", p.mode, st), true
			}
		}
	}
	if m.ceiling != boundaryUnknown && m.ceiling < boundaryExternal {
		b := parseBoundary(st.d.BoundaryDeclared)
		if b == boundaryUnknown || b > m.ceiling {
			if st.tr != nil {
				st.tr.add("manifest of %q: boundary %s (declared %q) is above the ceiling %s", m.agent, b, st.d.BoundaryDeclared, m.ceiling)
			}
			why := "this call crosses a boundary beyond this agent's manifest (" + m.ceiling.String() + ")"
			if b == boundaryUnknown {
				why = "this agent's manifest allows boundaries up to " + m.ceiling.String() + ", and nothing declares this tool's (classifier.tools or the upstream's zone)"
			}
			return p.decision(intercept.Deny, ReasonManifestBoundary, why, "", "", p.mode, st), true
		}
	}
	if st.tr != nil {
		st.tr.add("manifest of %q: allows this call", m.agent)
	}
	return intercept.Decision{}, false
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Forwarded implements intercept.ForwardObserver: it remembers the call's
// classes, its tool name (bare and pinned) and its upstream under the
// session key and the agent key, at the policy's clock — those of them a
// route rule's after side names, so that calls no rule cares about can
// neither grow route memory nor crowd a source out of it (a route rule
// added by a reload sees what was forwarded from then on). A store error
// is returned, and the interceptor then denies the call: memory never
// fails open.
func (p *Policy) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if p == nil || d == nil || dec.Verdict != intercept.Allow || len(p.after) == 0 {
		return nil // nothing to remember: no route rule has an after side
	}
	a := p.memoryAgent(d)
	return p.remember(ctx, d, "the call is denied", MemoryKey(ScopeSession, a, d.SessionID), MemoryKey(ScopeAgent, a, ""))
}

// memoryAgent is the agent whose route memory d is remembered in and
// decided by: d.Agent or, with Options.OneUnauthenticatedAgent, "" for a
// call without an authenticated principal, whatever name it gives (no
// principal's ID is empty: package auth refuses one). A session is still
// its own: its id is the session's, which only its agent may use.
func (p *Policy) memoryAgent(d *intercept.ActionDescriptor) string {
	if p.oneUnauthenticated && d.Principal == nil {
		return ""
	}
	return d.Agent
}

// remember writes the labels of d a route rule's after side names under
// each key; a store error (logged, saying what then happens: then) is
// returned, and a panic of the store is an error.
func (p *Policy) remember(ctx context.Context, d *intercept.ActionDescriptor, then string, keys ...Key) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("policy: route memory panicked", "tool", d.ToolName, "panic", r)
			err = fmt.Errorf("route memory panicked: %v", r)
		}
	}()
	labels := p.afterLabels(d)
	if len(labels) == 0 {
		return nil
	}
	now := p.now()
	for _, k := range keys {
		if err := p.store.Remember(ctx, k, labels, now); err != nil {
			p.memoryFailed(1, "policy: cannot write route memory; "+then, "key", k.String(), "tool", d.ToolName, "err", err)
			return fmt.Errorf("route memory: %w", err)
		}
	}
	return nil
}

// afterLabels are the labels of d that a route rule's after side names:
// what Forwarded remembers.
func (p *Policy) afterLabels(d *intercept.ActionDescriptor) []string {
	name, _, _ := actionName(d)
	classes, _ := p.lookup(d.Upstream, name)
	labels := make([]string, 0, len(classes)+3)
	for _, l := range classes {
		if p.after[l] {
			labels = append(labels, l)
		}
	}
	for _, l := range [...]string{labelTool + name, labelTool + d.Upstream + "/" + name, labelUpstream + d.Upstream} {
		if p.after[l] {
			labels = append(labels, l)
		}
	}
	return labels
}

// LinkSession remembers d, an action Forwarded remembered, under session
// too (intercept.SessionLinker): an A2A conversation's first message,
// decided before the agent named the conversation, is in its session's
// route memory as if decided in it. A store error is returned.
func (p *Policy) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	if p == nil || d == nil || len(p.after) == 0 {
		return nil
	}
	return p.remember(ctx, d, "the session is not taken up", MemoryKey(ScopeSession, p.memoryAgent(d), session))
}

// Classes returns the classes tool_classes gives a tool on an upstream
// (the upstream/tool entry first, then the bare name), or nil. A nil
// *Policy has none. The caller must not change the slice.
func (p *Policy) Classes(upstream, tool string) []string {
	if p == nil {
		return nil
	}
	cs, _ := p.lookup(upstream, tool)
	return cs
}

// Classes returns the current policy's classes for a tool.
func (w *Watcher) Classes(upstream, tool string) []string { return w.Policy().Classes(upstream, tool) }

// neutralClassification is m with every classifier attribute a condition
// may read present, as a value of its type: strings "", numbers 0,
// booleans false; what m holds stays.
func neutralClassification(m map[string]any) map[string]any {
	out := map[string]any{
		"composite_confidence": 0.0, "disposition": "", "consistent_with_declaration": false,
		"capability_class": "", "risk_level": "", "injection_suspected": false, "tool_poisoning": false,
	}
	for _, axis := range []string{"action_type", "boundary", "sensitivity", "scale", "reversibility"} {
		out[axis], out[axis+"_confidence"] = "", 0.0
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// memoryFailures throttles the log of route memory's failures: while its
// store does not answer every call governed by a route rule fails, and
// each was an ERROR line (or, for a read, none at all: the deny said only
// policy_error). One line at most every memoryFailureLogEvery, with how
// many failed since the last.
type memoryFailures struct {
	mu   sync.Mutex
	last time.Time
	n    int
}

// memoryFailureLogEvery is the least time between two lines of
// memoryFailures.
const memoryFailureLogEvery = 10 * time.Second

// memoryFailed logs msg and args at ERROR unless a failure of its kind
// (0: a read, 1: a write) was logged within memoryFailureLogEvery; a line
// says how many of its kind failed since the last (failures).
func (p *Policy) memoryFailed(kind int, msg string, args ...any) {
	if p.memFailures == nil {
		p.log.Error(msg, args...)
		return
	}
	f := &p.memFailures[kind]
	now := p.now()
	f.mu.Lock()
	f.n++
	if !f.last.IsZero() && now.Sub(f.last) < memoryFailureLogEvery {
		f.mu.Unlock()
		return
	}
	n := f.n
	f.n, f.last = 0, now
	f.mu.Unlock()
	p.log.Error(msg, append(args, "failures", n)...)
}

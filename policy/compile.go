package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/intercept"
)

// Options configures Compile. The zero value means the documented
// defaults.
type Options struct {
	// Now is the clock of route memory and windows; nil means time.Now.
	Now func() time.Time
	// Store is the route memory; nil means a new MemoryStore with default
	// bounds. Pass the same Store to every Compile of a reloaded policy so
	// that memory survives the reload (Watcher does this).
	Store Store
	// CostLimit bounds the CEL cost of evaluating one condition; zero means
	// DefaultCostLimit.
	CostLimit uint64
	// Logger receives what cannot be returned: route memory that could not
	// be written in Forwarded, rejected reloads. Nil means slog.Default().
	Logger *slog.Logger
	// OneUnauthenticatedAgent makes every call without an authenticated
	// principal (ActionDescriptor.Principal nil) one agent to route
	// memory: such calls are remembered, and decided, in one agent memory
	// and, outside a session, one session memory, whatever name they
	// give. Without authentication a name is the client's claim, made
	// anew with each session and each 2026-07-28 request, and a memory per
	// claimed name let an agent read a source as one name and call a sink
	// as another. Manifests and everything else still go by the name.
	// False keeps memory per Agent, as `sluice policy test` cases name
	// agents.
	OneUnauthenticatedAgent bool
}

// Policy is a compiled policy. It is immutable apart from its route
// memory (the Store) and safe for concurrent use. A nil *Policy denies
// every call with policy_not_configured.
type Policy struct {
	file    string
	version string
	def     intercept.Verdict
	defRead intercept.Verdict // of resources/read and prompts/get
	mode    intercept.ResultMode

	classes map[toolKey][]string // {upstream, tool} and {"", tool}
	// The keys of classes, for carries (carry.go): the tools pinned to
	// each upstream, and those of no upstream.
	pinnedTools map[string][]string
	bareTools   []string
	prefixes    []prefixClass     // reads' tool_classes keys ending in *, longest first
	names       map[string]bool   // every configured tool name (tool part)
	looks       map[string]string // skeleton -> configured name
	rules       []*rule
	routes      []*routeRule
	idx         index
	manifests   map[string]*manifest
	after       map[string]bool // every label a route rule's after side names

	store Store
	now   func() time.Time
	log   *slog.Logger
	// oneUnauthenticated is Options.OneUnauthenticatedAgent.
	oneUnauthenticated bool
	// memFailures throttle the log of what route memory could not do:
	// [0] reads, [1] writes.
	memFailures *[2]memoryFailures
}

var (
	_ intercept.Decider         = (*Policy)(nil)
	_ intercept.ForwardObserver = (*Policy)(nil)
)

// pos is where something was written.
type pos struct {
	line, col int
	path      string
}

func posOf(s str) pos {
	if s.n == nil {
		return pos{path: s.path}
	}
	return pos{s.n.Line, s.n.Column, s.path}
}

// toolKey is a tool, pinned to an upstream or (upstream "") not.
type toolKey struct{ upstream, tool string }

func (k toolKey) String() string {
	if k.upstream == "" {
		return k.tool
	}
	return k.upstream + "/" + k.tool
}

// Verdict slots, in precedence order, and the route-rule slot of the
// index.
const (
	slotDeny = iota
	slotApproval
	slotAllow
	slotRoute
	nSlots
)

var slotVerdict = [3]intercept.Verdict{intercept.Deny, intercept.RequireApproval, intercept.Allow}

type matcher struct {
	tools     []string  // bare names, any upstream
	pinned    []toolKey // names on one upstream
	anyOf     []string
	allOf     []string
	upstreams []string
}

func (m *matcher) empty() bool {
	return len(m.tools)+len(m.pinned)+len(m.anyOf)+len(m.allOf)+len(m.upstreams) == 0
}

func (m *matcher) matches(upstream, name string, classes []string) bool {
	if len(m.upstreams) > 0 && !slices.Contains(m.upstreams, upstream) {
		return false
	}
	if len(m.tools)+len(m.pinned) > 0 && !slices.Contains(m.tools, name) &&
		!slices.Contains(m.pinned, toolKey{upstream, name}) {
		return false
	}
	if len(m.anyOf) > 0 && !containsAny(classes, m.anyOf) {
		return false
	}
	for _, c := range m.allOf {
		if !slices.Contains(classes, c) {
			return false
		}
	}
	return true
}

func containsAny(have, want []string) bool {
	for _, c := range have {
		if slices.Contains(want, c) {
			return true
		}
	}
	return false
}

type rule struct {
	id     string
	slot   int
	m      matcher
	when   *condition
	reason string // the author's reason, for traces
	public string // what the model is told
	mode   intercept.ResultMode
	code   string
	at     pos
}

type routeRule struct {
	id          string
	after, deny matcher
	// groups are the label sets the after side needs: every group must
	// have one label remembered.
	groups [][]string
	scope  Scope
	window time.Duration
	reason string
	public string
	mode   intercept.ResultMode
	at     pos
}

type boundary int

const (
	boundaryUnknown boundary = iota
	boundaryLocal
	boundaryIntraOrg
	boundaryExternal
)

func parseBoundary(s string) boundary {
	switch strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(strings.TrimSpace(s))) {
	case "local":
		return boundaryLocal
	case "intra-org", "intraorg":
		return boundaryIntraOrg
	case "external":
		return boundaryExternal
	}
	return boundaryUnknown
}

func (b boundary) String() string {
	return [...]string{"unknown", "local", "intra-org", "external"}[b]
}

// anyAgent is the manifests key of the manifest for agents that have none
// of their own.
const anyAgent = "*"

type manifest struct {
	agent   string
	allowed []string
	hasList bool
	ceiling boundary
	at      pos
}

// Labels of route memory besides the classes themselves. Classes may not
// start with '@', so these cannot collide with one.
const (
	labelTool     = "@tool:"
	labelUpstream = "@upstream:"
)

// Compile reads and compiles a policy. src is either a bare policy
// document or a file with a top-level `policy:` key (sluice.yaml, or a
// policy test file), in which case only that key is read. filename is used
// in error messages. All problems found are returned together, joined;
// each is a *LoadError matching ErrInvalid.
func Compile(src []byte, filename string, opts Options) (*Policy, error) {
	l := &loader{file: filename}
	rp := l.parse(src)
	if rp == nil || len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	p := l.compile(rp, opts)
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	p.file = filename
	if opts.Store == nil {
		opts.Store = NewMemoryStore(MemoryOptions{})
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p.store, p.now, p.log = opts.Store, opts.Now, opts.Logger
	p.oneUnauthenticated = opts.OneUnauthenticatedAgent
	p.memFailures = &[2]memoryFailures{}
	return p, nil
}

func (l *loader) compile(rp *rawPolicy, opts Options) *Policy {
	p := &Policy{
		def:       intercept.Deny,
		defRead:   intercept.Allow,
		mode:      intercept.ModeThrow,
		classes:   make(map[toolKey][]string, len(rp.toolClasses)),
		names:     map[string]bool{},
		manifests: map[string]*manifest{},
	}
	if rp.def != nil {
		switch rp.def.v {
		case "deny":
		case "allow":
			p.def = intercept.Allow
		default:
			l.errorf(rp.def.n, rp.def.path, "%q is not a default; use deny or allow", rp.def.v)
		}
	}
	if rp.defRead != nil {
		switch rp.defRead.v {
		case "allow":
		case "deny":
			p.defRead = intercept.Deny
		default:
			l.errorf(rp.defRead.n, rp.defRead.path, "%q is not a default_read; use allow (reads no rule decides are forwarded) or deny", rp.defRead.v)
		}
	}
	if rp.mode != nil {
		p.mode = l.resultMode(rp.mode)
	}

	toolPos := make(map[toolKey]pos, len(rp.toolClasses))
	for _, tc := range rp.toolClasses {
		k, ok := l.toolRef(tc.key, "a tool_classes key")
		if !ok {
			continue
		}
		if prev, dup := toolPos[k]; dup {
			l.errorf(tc.key.n, tc.key.path, "%s is already classified at line %d (the names are equal after Unicode NFC normalisation); keep one", k, prev.line)
			continue
		}
		if len(tc.classes) == 0 {
			l.errorf(tc.key.n, tc.key.path, "%s has no classes; give it a non-empty list such as [source:local], or remove it", k)
			continue
		}
		var cs []string
		for _, c := range tc.classes {
			if !l.class(c) {
				continue
			}
			if slices.Contains(cs, c.v) {
				l.errorf(c.n, c.path, "class %q is listed twice for %s; list each class once", c.v, k)
				continue
			}
			cs = append(cs, c.v)
		}
		toolPos[k] = posOf(tc.key)
		if prefix, ok := strings.CutSuffix(k.tool, "*"); ok && isRead(k.tool) {
			p.prefixes = append(p.prefixes, prefixClass{upstream: k.upstream, prefix: prefix, classes: cs})
			continue
		}
		p.classes[k] = cs
		p.names[k.tool] = true
	}
	p.pinnedTools = map[string][]string{}
	for k := range p.classes {
		if k.upstream == "" {
			p.bareTools = append(p.bareTools, k.tool)
		} else {
			p.pinnedTools[k.upstream] = append(p.pinnedTools[k.upstream], k.tool)
		}
	}
	slices.Sort(p.bareTools) // a carry's deny names the first tool that closed its upstream: the same one each time
	for _, ts := range p.pinnedTools {
		slices.Sort(ts)
	}
	slices.SortStableFunc(p.prefixes, func(a, b prefixClass) int {
		if len(a.prefix) != len(b.prefix) {
			return len(b.prefix) - len(a.prefix)
		}
		return strings.Compare(b.upstream, a.upstream) // pinned ("" sorts last) first
	})

	env, err := newCELEnv()
	if err != nil {
		l.errorf(nil, "", "cannot set up CEL: %v", err)
		return p
	}
	costLimit := opts.CostLimit
	if costLimit == 0 {
		costLimit = DefaultCostLimit
	}
	ids := map[string]pos{}
	claimID := func(id *str, n *yaml.Node, path string) string {
		if id == nil || strings.TrimSpace(id.v) == "" {
			l.errorf(n, path, "the rule has no id; give it one (ids name rules in decisions and logs)")
			return ""
		}
		if prev, dup := ids[id.v]; dup {
			l.errorf(id.n, id.path, "id %q is already used at line %d; ids must be unique across rules and route_rules", id.v, prev.line)
		}
		ids[id.v] = posOf(*id)
		return id.v
	}

	for _, rr := range rp.rules {
		r := &rule{at: pos{rr.n.Line, rr.n.Column, rr.path}, mode: p.mode}
		r.id = claimID(rr.id, rr.n, rr.path)
		if rr.decision == nil {
			l.errorf(rr.n, rr.path, "rule %q has no decision; add decision: allow, deny or require_approval", r.id)
		} else {
			switch rr.decision.v {
			case "deny":
				r.slot, r.code = slotDeny, ReasonRuleDeny
			case "require_approval":
				r.slot, r.code = slotApproval, ReasonApprovalRequired
			case "allow":
				r.slot, r.code = slotAllow, ReasonRuleAllow
			default:
				l.errorf(rr.decision.n, rr.decision.path, "%q is not a decision; use allow, deny or require_approval", rr.decision.v)
			}
		}
		if rr.match != nil {
			r.m = l.matcher(rr.match, p)
			if rr.match.empty() {
				l.errorf(rr.match.n, rr.match.path, "the matcher is empty; name match_tool, match_any_class, match_all_classes or upstream, or drop match to match every call")
			}
		}
		if rr.when != nil {
			c, err := compileCondition(env, rr.when.v, costLimit)
			if err != nil {
				l.errorf(rr.when.n, rr.when.path, "the condition does not compile: %s", strings.ReplaceAll(err.Error(), "\n", " "))
			}
			r.when = c
		}
		if rr.mode != nil {
			r.mode = l.resultMode(rr.mode)
		}
		if rr.reason != nil {
			r.reason = rr.reason.v
		}
		r.public = publicText(rr.public, rr.reason, slotVerdict[r.slot], r.id)
		p.rules = append(p.rules, r)
	}
	sugarKeys := [3]string{"deny", "require_approval", "allow"}
	sugarCodes := [3]string{ReasonRuleDeny, ReasonApprovalRequired, ReasonRuleAllow}
	for slot, names := range rp.sugar {
		for _, s := range names {
			k, ok := l.toolRef(s, "a tool name")
			if !ok || !l.noPrefix(s, k) {
				continue
			}
			r := &rule{id: sugarKeys[slot] + ":" + k.String(), slot: slot, code: sugarCodes[slot], mode: p.mode, at: posOf(s)}
			if k.upstream == "" {
				r.m.tools = []string{k.tool}
			} else {
				r.m.pinned = []toolKey{k}
			}
			r.reason = fmt.Sprintf("%s is in the %s list", k, sugarKeys[slot])
			r.public = publicText(nil, nil, slotVerdict[slot], k.String())
			p.names[k.tool] = true
			p.rules = append(p.rules, r)
		}
	}

	p.routes = l.routes(rp, p, claimID)
	if rs, ok := opts.Store.(Retainer); ok {
		for i, r := range p.routes {
			if ret, w := rs.Retention(), rp.routes[i].window; ret > 0 && r.window > ret {
				l.errorf(w.n, w.path, "window %s is longer than route memory keeps a memory after its last write (%s, route_memory.ttl in sluice.yaml): a source inside the window could be forgotten; shorten the window or raise route_memory.ttl", w.v, ret)
			}
		}
	}
	p.after = map[string]bool{}
	for _, r := range p.routes {
		for _, g := range r.groups {
			for _, label := range g {
				p.after[label] = true
			}
		}
	}

	for _, rm := range rp.manifests {
		m := &manifest{agent: rm.agent.v, hasList: rm.hasList, at: posOf(rm.agent)}
		for _, c := range rm.allowed {
			if l.class(c) {
				m.allowed = append(m.allowed, c.v)
			}
		}
		if rm.ceiling != nil {
			if m.ceiling = parseBoundary(rm.ceiling.v); m.ceiling == boundaryUnknown {
				l.errorf(rm.ceiling.n, rm.ceiling.path, "%q is not a boundary; use local, intra-org or external", rm.ceiling.v)
			}
		}
		if !rm.hasList && rm.ceiling == nil {
			l.errorf(rm.agent.n, rm.agent.path, "the manifest of %q says nothing; give it allowed_classes, boundary_ceiling or both", rm.agent.v)
		}
		// Keyed in NFC, as agents are looked up: "jose\u0301" and
		// "jos\u00e9" are one agent.
		if m.agent != anyAgent {
			m.agent = nfc(m.agent)
		}
		if old := p.manifests[m.agent]; old != nil {
			l.errorf(rm.agent.n, rm.agent.path, "the manifest of %q is the same agent as another manifest's (once normalized)", rm.agent.v)
		}
		p.manifests[m.agent] = m
	}

	p.looks = make(map[string]string, len(p.names))
	for n := range p.names {
		if isRead(n) {
			continue // a URI is not a tool name a look-alike could imitate
		}
		sk := skeleton(n)
		if prev, ok := p.looks[sk]; !ok || n < prev {
			p.looks[sk] = n // the smallest, for deterministic traces
		}
	}
	p.buildIndex()
	p.version = p.canonicalHash()
	return p
}

func (l *loader) routes(rp *rawPolicy, p *Policy, claimID func(*str, *yaml.Node, string) string) []*routeRule {
	var out []*routeRule
	for _, rr := range rp.routes {
		r := &routeRule{at: pos{rr.n.Line, rr.n.Column, rr.path}, scope: ScopeSession, mode: p.mode}
		r.id = claimID(rr.id, rr.n, rr.path)
		for _, side := range []struct {
			name string
			raw  *rawMatch
			m    *matcher
		}{{"after", rr.after, &r.after}, {"deny", rr.deny, &r.deny}} {
			if side.raw == nil {
				l.errorf(rr.n, rr.path, "route rule %q has no %s side; add %s: {match_any_class: [...]}", r.id, side.name, side.name)
				continue
			}
			*side.m = l.matcher(side.raw, p)
			if side.raw.empty() {
				l.errorf(side.raw.n, side.raw.path, "the %s side is empty; name match_tool, match_any_class, match_all_classes or upstream", side.name)
			}
		}
		r.groups = afterGroups(&r.after)
		if rr.scope != nil {
			switch Scope(rr.scope.v) {
			case ScopeSession, ScopeAgent:
				r.scope = Scope(rr.scope.v)
			default:
				l.errorf(rr.scope.n, rr.scope.path, "%q is not a scope; use session or agent", rr.scope.v)
			}
		}
		if rr.window != nil {
			d, err := parseWindow(rr.window.v)
			if err != nil {
				l.errorf(rr.window.n, rr.window.path, "%q is not a window: %v; write a positive duration such as 30m, 24h or 7d, or drop window for the scope's lifetime", rr.window.v, err)
			}
			r.window = d
		}
		if rr.mode != nil {
			r.mode = l.resultMode(rr.mode)
		}
		if rr.reason != nil {
			r.reason = rr.reason.v
		}
		r.public = publicText(rr.public, rr.reason, intercept.Deny, r.id)
		out = append(out, r)
	}
	return out
}

// afterGroups turns an after side into label groups, each of which must
// have been remembered: one group for match_any_class, one per class of
// match_all_classes (the classes may have come from different calls), one
// for the tools and one for the upstreams.
func afterGroups(m *matcher) [][]string {
	var gs [][]string
	if len(m.anyOf) > 0 {
		gs = append(gs, m.anyOf)
	}
	for _, c := range m.allOf {
		gs = append(gs, []string{c})
	}
	if len(m.tools)+len(m.pinned) > 0 {
		var g []string
		for _, t := range m.tools {
			g = append(g, labelTool+t)
		}
		for _, k := range m.pinned {
			g = append(g, labelTool+k.String())
		}
		gs = append(gs, g)
	}
	if len(m.upstreams) > 0 {
		var g []string
		for _, u := range m.upstreams {
			g = append(g, labelUpstream+u)
		}
		gs = append(gs, g)
	}
	return gs
}

func parseWindow(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		if int64(days) > math.MaxInt64/int64(24*time.Hour) {
			return 0, errors.New("too long")
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil {
		return 0, errors.New("not a duration")
	}
	if d <= 0 {
		return 0, errors.New("not positive")
	}
	return d, nil
}

func publicText(public, reason *str, v intercept.Verdict, id string) string {
	switch {
	case public != nil && public.v != "":
		return public.v
	case reason != nil && reason.v != "":
		return reason.v
	}
	switch v {
	case intercept.Allow:
		return "allowed by policy (" + id + ")"
	case intercept.RequireApproval:
		return "this call needs a human's approval (" + id + ")"
	}
	return "this call is not allowed by policy (" + id + ")"
}

func (l *loader) resultMode(s *str) intercept.ResultMode {
	switch m := intercept.ResultMode(s.v); m {
	case intercept.ModeThrow, intercept.ModeToolResult:
		return m
	}
	l.errorf(s.n, s.path, "%q is not a result_mode; use tool_result (the model reads the denial) or throw (a JSON-RPC error)", s.v)
	return intercept.ModeThrow
}

// toolRef reads a tool name, NFC-normalised; upstream/tool pins it to an
// upstream. The part before the first slash is the upstream, so a tool
// whose own name holds a slash is written pinned: upstream/a/b. A read's
// name (resource:URI, prompt:NAME) and a carry's (mcp:METHOD) are never split, and its URI is put in
// normal form; a final * (a prefix) is kept.
func (l *loader) toolRef(s str, what string) (toolKey, bool) {
	name := nfc(s.v)
	if strings.TrimSpace(name) == "" {
		l.errorf(s.n, s.path, "%s is empty; write the tool's name", what)
		return toolKey{}, false
	}
	var k toolKey
	if strings.HasPrefix(name, intercept.CarryPrefix) && !strings.Contains(name, "*") {
		// A carry's name holds its method's slash
		// (mcp:completion/complete): never upstream/tool
		// (TestAttackUnpinnedCarryName).
		return toolKey{tool: name}, true
	}
	if isRead(name) {
		k.tool = name
	} else if up, tool, _ := strings.Cut(name, "/"); strings.Contains(up, "*") || strings.Contains(tool, "*") && !isRead(tool) {
		// rate_limits' tool filters are globs; here a * would be part
		// of one tool's name, and deny: ["fs/*"] would deny no tool of
		// fs (TestAttackToolGlobIsNoGlob).
		l.errorf(s.n, s.path, "%s %q holds a *: tool names match exactly, and * is no wildcard here (a read's prefix, resource:URI*, in tool_classes aside); to match every tool of an upstream write match: {upstream: NAME}, or name each tool", what, s.v)
		return toolKey{}, false
	} else {
		up, tool, pinned := strings.Cut(name, "/")
		if !pinned {
			return toolKey{tool: name}, true
		}
		if up == "" || tool == "" {
			l.errorf(s.n, s.path, "%q is not upstream/tool; write the tool's name, or the upstream's name, a slash and the tool's name", s.v)
			return toolKey{}, false
		}
		if !isRead(tool) {
			return toolKey{upstream: up, tool: tool}, true
		}
		k = toolKey{upstream: up, tool: tool}
	}
	if prefix, ok := strings.CutSuffix(k.tool, "*"); ok {
		k.tool = normReadPrefix(prefix) + "*"
	} else {
		k.tool = normRead(k.tool)
	}
	return k, true
}

// noPrefix reports an error for a read's prefix (a name ending in *) where
// only exact names are matched.
func (l *loader) noPrefix(s str, k toolKey) bool {
	if isRead(k.tool) && strings.HasSuffix(k.tool, "*") {
		l.errorf(s.n, s.path, "%q is a prefix; prefixes are for tool_classes keys only: classify the prefix there and match its class", s.v)
		return false
	}
	return true
}

// class checks a class name: printable, no white space, not starting with
// '@' (route memory uses that for tool and upstream labels).
func (l *loader) class(s str) bool {
	bad := s.v == "" || strings.HasPrefix(s.v, "@")
	for _, r := range s.v {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			bad = true
		}
	}
	if bad {
		l.errorf(s.n, s.path, "%q is not a class; use a non-empty name without spaces that does not start with @, such as source:sensitive", s.v)
	}
	return !bad
}

func (l *loader) matcher(rm *rawMatch, p *Policy) matcher {
	var m matcher
	for _, s := range rm.tools {
		k, ok := l.toolRef(s, "a match_tool entry")
		if !ok || !l.noPrefix(s, k) {
			continue
		}
		if k.upstream == "" {
			m.tools = append(m.tools, k.tool)
		} else {
			m.pinned = append(m.pinned, k)
		}
		p.names[k.tool] = true
	}
	for _, s := range rm.anyOf {
		if l.class(s) {
			m.anyOf = append(m.anyOf, s.v)
		}
	}
	for _, s := range rm.allOf {
		if l.class(s) {
			m.allOf = append(m.allOf, s.v)
		}
	}
	for _, s := range rm.ups {
		if s.v == "" || strings.Contains(s.v, "/") {
			l.errorf(s.n, s.path, "%q is not an upstream name; write the name the upstream has in sluice.yaml", s.v)
			continue
		}
		m.upstreams = append(m.upstreams, s.v)
	}
	return m
}

// canonicalHash is the policy version: the SHA-256 of a canonical JSON
// rendering of everything that can change a decision, so that reordering
// tool_classes or reformatting the file does not change it.
func (p *Policy) canonicalHash() string {
	type cm struct {
		Tools     []string `json:"tools,omitempty"`
		AnyOf     []string `json:"any,omitempty"`
		AllOf     []string `json:"all,omitempty"`
		Upstreams []string `json:"upstreams,omitempty"`
	}
	conv := func(m matcher) cm {
		c := cm{Tools: slices.Clone(m.tools), AnyOf: m.anyOf, AllOf: m.allOf, Upstreams: m.upstreams}
		for _, k := range m.pinned {
			c.Tools = append(c.Tools, k.String())
		}
		return c
	}
	type cr struct {
		ID, Decision, When, Public, Mode string
		Match                            cm
	}
	type crr struct {
		ID, Scope, Public, Mode string
		Window                  time.Duration
		After, Deny             cm
	}
	type cman struct {
		Allowed []string
		HasList bool
		Ceiling string
	}
	c := struct {
		Default, Mode string
		DefaultRead   string `json:",omitempty"` // only when deny: older versions stay the same
		ToolClasses   map[string][]string
		Rules         []cr
		Routes        []crr
		Manifests     map[string]cman
	}{Default: string(p.def), Mode: string(p.mode), ToolClasses: map[string][]string{}, Manifests: map[string]cman{}}
	for k, cs := range p.classes {
		c.ToolClasses[k.String()] = cs
	}
	for _, pc := range p.prefixes {
		c.ToolClasses[toolKey{pc.upstream, pc.prefix + "*"}.String()] = pc.classes
	}
	if p.defRead == intercept.Deny {
		c.DefaultRead = string(p.defRead)
	}
	for _, r := range p.rules {
		x := cr{ID: r.id, Decision: string(slotVerdict[r.slot]), Public: r.public, Mode: string(r.mode), Match: conv(r.m)}
		if r.when != nil {
			x.When = r.when.src
		}
		c.Rules = append(c.Rules, x)
	}
	for _, r := range p.routes {
		c.Routes = append(c.Routes, crr{ID: r.id, Scope: string(r.scope), Public: r.public, Mode: string(r.mode), Window: r.window, After: conv(r.after), Deny: conv(r.deny)})
	}
	for a, m := range p.manifests {
		c.Manifests[a] = cman{Allowed: m.allowed, HasList: m.hasList, Ceiling: m.ceiling.String()}
	}
	b, err := json.Marshal(c) // maps marshal with sorted keys
	if err != nil {
		panic(err) // plain data cannot fail to marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Version is the policy's version: the hex SHA-256 of its canonical form.
func (p *Policy) Version() string { return p.version }

// File is the file name the policy was compiled from.
func (p *Policy) File() string { return p.file }

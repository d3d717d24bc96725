package classifier

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Profile names the axes a classifier fills in and composite confidence
// weighs (RFC-010 §5.4).
type Profile string

const (
	// ProfileDefault is action type and boundary: the RFC's required
	// minimum, and what the zero Profile means.
	ProfileDefault Profile = "default"
	// ProfileExtended adds sensitivity, scale and reversibility.
	ProfileExtended Profile = "extended"
)

var (
	defaultAxes  = []string{AxisActionType, AxisBoundary}
	extendedAxes = []string{AxisActionType, AxisBoundary, AxisSensitivity, AxisScale, AxisReversibility}
)

// Axes returns the profile's axes in RFC order. The caller must not change
// the slice.
func (p Profile) Axes() []string {
	if p == ProfileExtended {
		return extendedAxes
	}
	return defaultAxes
}

// PerAxis holds one number per axis: weights or confidence floors.
type PerAxis struct {
	ActionType    float64 `json:"action_type,omitempty" yaml:"action_type,omitempty"`
	Boundary      float64 `json:"boundary,omitempty" yaml:"boundary,omitempty"`
	Sensitivity   float64 `json:"sensitivity,omitempty" yaml:"sensitivity,omitempty"`
	Scale         float64 `json:"scale,omitempty" yaml:"scale,omitempty"`
	Reversibility float64 `json:"reversibility,omitempty" yaml:"reversibility,omitempty"`
}

// Get returns the value for axis, 0 for an unknown axis.
func (p PerAxis) Get(axis string) float64 {
	switch axis {
	case AxisActionType:
		return p.ActionType
	case AxisBoundary:
		return p.Boundary
	case AxisSensitivity:
		return p.Sensitivity
	case AxisScale:
		return p.Scale
	case AxisReversibility:
		return p.Reversibility
	}
	return 0
}

func (p *PerAxis) set(axis string, v float64) {
	switch axis {
	case AxisActionType:
		p.ActionType = v
	case AxisBoundary:
		p.Boundary = v
	case AxisSensitivity:
		p.Sensitivity = v
	case AxisScale:
		p.Scale = v
	case AxisReversibility:
		p.Reversibility = v
	}
}

// Default weights (RFC-010 §6.2) and per-axis confidence floors. The
// reversibility floor is the RFC's composite threshold, 0.7, because §5.4
// asks for Irreversible whenever that axis is below it.
var (
	defaultWeights = PerAxis{ActionType: 0.40, Boundary: 0.30, Sensitivity: 0.15, Scale: 0.10, Reversibility: 0.05}
	defaultFloors  = PerAxis{ActionType: 0.6, Boundary: 0.6, Sensitivity: 0.6, Scale: 0.6, Reversibility: 0.7}
)

// Thresholds route a composite confidence (RFC-010 §6.3). A zero field
// means its default.
type Thresholds struct {
	// Proceed is the lowest composite that proceeds silently. Zero: 0.85.
	Proceed float64 `json:"proceed,omitempty" yaml:"proceed,omitempty"`
	// Log is the lowest composite that proceeds with logging. Zero: 0.70.
	Log float64 `json:"log,omitempty" yaml:"log,omitempty"`
	// Escalate is the lowest composite that escalates; anything lower is a
	// mandatory escalation with INTENT_CLASSIFICATION_MISMATCH /
	// LOW_CONFIDENCE. Zero: 0.50.
	Escalate float64 `json:"escalate,omitempty" yaml:"escalate,omitempty"`
}

func (t Thresholds) resolved() Thresholds {
	if t.Proceed == 0 {
		t.Proceed = 0.85
	}
	if t.Log == 0 {
		t.Log = 0.70
	}
	if t.Escalate == 0 {
		t.Escalate = 0.50
	}
	return t
}

// ToolConfig is what the operator declares about one tool. Every field is
// optional; a declared axis value is taken as certain (confidence 1.0,
// source "config").
type ToolConfig struct {
	// ActionType is one of Read, Write, Execute, Orchestrate, Provision.
	ActionType string `json:"action_type,omitempty" yaml:"action_type,omitempty"`
	// Boundary is one of Local, Intra-org, External.
	Boundary string `json:"boundary,omitempty" yaml:"boundary,omitempty"`
	// Sensitivity is one of Public, Internal, Confidential, Restricted, Regulated.
	Sensitivity string `json:"sensitivity,omitempty" yaml:"sensitivity,omitempty"`
	// Scale is one of Targeted, Bounded, Unbounded.
	Scale string `json:"scale,omitempty" yaml:"scale,omitempty"`
	// Reversibility is one of Reversible, Recoverable, Irreversible.
	Reversibility string `json:"reversibility,omitempty" yaml:"reversibility,omitempty"`
	// CapabilityClass is the tool's dotted capability class, such as
	// "finance.invoicing.management"; it becomes the verdict's class.
	CapabilityClass string `json:"capability_class,omitempty" yaml:"capability_class,omitempty"`
	// Classes are further capability classes the tool belongs to, such as
	// "filesystem.read"; verbs in them inform the action type.
	Classes []string `json:"classes,omitempty" yaml:"classes,omitempty"`
}

// UpstreamConfig is what the operator declares about one upstream.
type UpstreamConfig struct {
	// Zone is the trust zone every call to the upstream is at least in:
	// Local, Intra-org or External. Empty: inferred from its endpoint.
	Zone string `json:"zone,omitempty" yaml:"zone,omitempty"`
	// EnvNames are the names (never the values) of the environment
	// variables the operator gives a stdio upstream, such as
	// ["GITHUB_TOKEN", "LOG_LEVEL"]. A server given an API's
	// credential (a name ending in _KEY, _TOKEN or _PAT, or holding
	// SECRET or CREDENTIALS), or one on its command line (--api-key,
	// --token), is configured to reach a service; one given nothing
	// of the kind may as well stay on this host. Where nothing else
	// places a call (the server names no service, the call no URL or
	// path) the first is External at 0.85, the second only as the
	// conservative default (0.55); an address or a password alone
	// (_URL, _HOST, _PASSWORD: a loopback database's too) leaves it at
	// 0.65. Nil: not known; empty: known to be none. sluice fills it
	// from a stdio upstream's env and the names its inherit_env gives
	// in full.
	EnvNames []string `json:"env_names,omitempty" yaml:"env_names,omitempty"`
}

// SensitivityRule maps resources to a sensitivity tier.
type SensitivityRule struct {
	// Match is a glob over paths, URIs and table names found in the call's
	// arguments and target: "*" matches within one "/"-separated segment,
	// "**" across segments, "?" one character. Matching ignores case.
	Match string `json:"match" yaml:"match"`
	// Tier is one of Public, Internal, Confidential, Restricted, Regulated.
	Tier string `json:"tier" yaml:"tier"`
}

// Options configure the built-in classifier and composite scoring. The
// zero value means the documented defaults: the default profile, RFC-010
// weights and thresholds, no declarations and no internal zones. Options
// are read at construction; changing them afterwards has no effect on a
// Builtin already made.
type Options struct {
	// Profile selects the axes. Zero: ProfileDefault.
	Profile Profile `json:"profile,omitempty" yaml:"profile,omitempty"`
	// Weights of each axis in the composite. All zero: 0.40 / 0.30 / 0.15
	// / 0.10 / 0.05 (§6.2). Otherwise taken as given; only the active
	// axes' weights count and they are normalised to sum to 1, which
	// spreads an inactive axis's weight over the others proportionally.
	Weights PerAxis `json:"weights,omitzero" yaml:"weights,omitempty"`
	// Thresholds for routing the composite. Zero: §6.3's defaults.
	Thresholds Thresholds `json:"thresholds,omitzero" yaml:"thresholds,omitempty"`
	// Floors are per-axis confidences below which the axis's conservative
	// default (§5.3) replaces the classified value. A zero field: 0.6, and
	// 0.7 for reversibility.
	Floors PerAxis `json:"floors,omitzero" yaml:"floors,omitempty"`
	// Tools declares values per tool, keyed by "upstream/tool" or by the
	// bare tool name; the qualified key wins.
	Tools map[string]ToolConfig `json:"tools,omitempty" yaml:"tools,omitempty"`
	// Classes, if not nil, returns further capability classes of a tool,
	// for instance from an inventory. It must be safe for concurrent use.
	Classes func(upstream, tool string) []string `json:"-" yaml:"-"`
	// Upstreams declares trust zones per upstream name.
	Upstreams map[string]UpstreamConfig `json:"upstreams,omitempty" yaml:"upstreams,omitempty"`
	// InternalDomains are DNS names inside the organisation's perimeter;
	// each matches itself and its subdomains ("corp.example.com" matches
	// "git.corp.example.com").
	InternalDomains []string `json:"internal_domains,omitempty" yaml:"internal_domains,omitempty"`
	// InternalCIDRs are address ranges inside the perimeter, such as
	// "10.0.0.0/8".
	InternalCIDRs []string `json:"internal_cidrs,omitempty" yaml:"internal_cidrs,omitempty"`
	// Sensitivity is the catalog: the highest tier of any matching rule
	// wins.
	Sensitivity []SensitivityRule `json:"sensitivity,omitempty" yaml:"sensitivity,omitempty"`
	// Now is the clock for classified_at. Nil: time.Now.
	Now func() time.Time `json:"-" yaml:"-"`
}

// weights returns the active axes' weights, normalised to sum to 1.
func (o *Options) weights() PerAxis {
	w := o.Weights
	if w == (PerAxis{}) {
		w = defaultWeights
	}
	var sum float64
	for _, a := range o.Profile.Axes() {
		sum += w.Get(a)
	}
	var out PerAxis
	if sum <= 0 {
		return out
	}
	for _, a := range o.Profile.Axes() {
		out.set(a, w.Get(a)/sum)
	}
	return out
}

func (o *Options) floors() PerAxis {
	f := o.Floors
	for _, a := range extendedAxes {
		if f.Get(a) == 0 {
			f.set(a, defaultFloors.Get(a))
		}
	}
	return f
}

// axisValues lists each axis's values, most restrictive last.
var axisValues = map[string][]string{
	AxisActionType:    {Read, Write, Execute, Orchestrate, Provision},
	AxisBoundary:      {Local, IntraOrg, External},
	AxisSensitivity:   {Public, Internal, Confidential, Restricted, Regulated},
	AxisScale:         {Targeted, Bounded, Unbounded},
	AxisReversibility: {Reversible, Recoverable, Irreversible},
}

// ValidValue reports whether value is one of axis's values (§5.1).
func ValidValue(axis, value string) bool {
	for _, v := range axisValues[axis] {
		if v == value {
			return true
		}
	}
	return false
}

// rank orders an axis's values from least to most restrictive; -1 for an
// unknown value.
func rank(axis, value string) int {
	for i, v := range axisValues[axis] {
		if v == value {
			return i
		}
	}
	return -1
}

// compiled is Options after validation: immutable, shared by every call.
type compiled struct {
	idZones sync.Map // stdio command line -> idZone
	// derived memoizes derivedClass: classKey -> string, at most
	// maxDerived of them (upstream names are the configuration's, the
	// action types a handful; the bound is a backstop).
	derived    sync.Map
	nDerived   atomic.Int64
	facts      *lru.Cache[toolKey, *toolFacts]
	profile    Profile
	axes       []string
	opts       Options // for Composite and Route
	floors     PerAxis
	tools      map[string]ToolConfig
	classes    func(upstream, tool string) []string
	zones      map[string]string
	envs       map[string]envKind // UpstreamConfig.EnvNames, read
	domains    []string
	cidrs      []netip.Prefix
	rules      []catalogRule
	now        func() time.Time
	thresholds Thresholds
	// fitted is fittedConfidence; nil gives every rule's own claim (the
	// dev fit of TestFittedConfidence reads those).
	fitted map[rulePath]float64
}

type catalogRule struct {
	re   *regexp.Regexp
	tier string
}

// Validate checks o and reports every problem, each naming the field and
// what to write instead.
func (o Options) Validate() error {
	_, err := compile(o)
	return err
}

func compile(o Options) (*compiled, error) {
	var errs []string
	bad := func(path, format string, args ...any) {
		errs = append(errs, path+": "+fmt.Sprintf(format, args...))
	}
	oneOf := func(path, axis, v string) {
		if v != "" && !ValidValue(axis, v) {
			bad(path, "%q is not one of %s", v, strings.Join(axisValues[axis], ", "))
		}
	}
	unit := func(path string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			bad(path, "%v is not in [0, 1]", v)
		}
	}

	if o.Profile != "" && o.Profile != ProfileDefault && o.Profile != ProfileExtended {
		bad("profile", "%q is not %q or %q", o.Profile, ProfileDefault, ProfileExtended)
	}
	for _, a := range extendedAxes {
		if w := o.Weights.Get(a); math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			bad("weights."+a, "%v is not a finite number >= 0", w)
		}
		unit("floors."+a, o.Floors.Get(a))
	}
	if o.Weights != (PerAxis{}) {
		var sum float64
		for _, a := range o.Profile.Axes() {
			sum += o.Weights.Get(a)
		}
		if sum <= 0 {
			bad("weights", "the active axes (%s) all weigh 0; give at least one a positive weight", strings.Join(o.Profile.Axes(), ", "))
		}
	}
	th := o.Thresholds.resolved()
	unit("thresholds.proceed", th.Proceed)
	unit("thresholds.log", th.Log)
	unit("thresholds.escalate", th.Escalate)
	if !(th.Escalate <= th.Log && th.Log <= th.Proceed) {
		bad("thresholds", "need escalate (%v) <= log (%v) <= proceed (%v)", th.Escalate, th.Log, th.Proceed)
	}

	c := &compiled{
		profile:    o.Profile,
		axes:       o.Profile.Axes(),
		opts:       o,
		floors:     o.floors(),
		tools:      make(map[string]ToolConfig, len(o.Tools)),
		classes:    o.Classes,
		zones:      make(map[string]string, len(o.Upstreams)),
		envs:       make(map[string]envKind),
		now:        o.Now,
		thresholds: th,
		fitted:     fittedConfidence,
	}
	c.facts, _ = lru.New[toolKey, *toolFacts](maxToolFacts) // errs only for a size <= 0
	if c.profile == "" {
		c.profile = ProfileDefault
	}
	if c.now == nil {
		c.now = time.Now
	}
	for _, name := range sortedKeys(o.Tools) {
		t := o.Tools[name]
		p := fmt.Sprintf("tools[%q]", name)
		if name == "" {
			bad(p, "empty tool name; use the tool's name or upstream/tool")
		}
		oneOf(p+".action_type", AxisActionType, t.ActionType)
		oneOf(p+".boundary", AxisBoundary, t.Boundary)
		oneOf(p+".sensitivity", AxisSensitivity, t.Sensitivity)
		oneOf(p+".scale", AxisScale, t.Scale)
		oneOf(p+".reversibility", AxisReversibility, t.Reversibility)
		c.tools[name] = t
	}
	for _, name := range sortedKeys(o.Upstreams) {
		z := o.Upstreams[name].Zone
		oneOf(fmt.Sprintf("upstreams[%q].zone", name), AxisBoundary, z)
		if z != "" {
			c.zones[name] = z
		}
		if names := o.Upstreams[name].EnvNames; names != nil {
			c.envs[name] = envNamesKind(names)
		}
	}
	for i, d := range o.InternalDomains {
		d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
		d = strings.TrimPrefix(d, "*.")
		if d == "" || strings.ContainsAny(d, "/:@ ") {
			bad(fmt.Sprintf("internal_domains[%d]", i), "%q is not a DNS name; write it as corp.example.com", o.InternalDomains[i])
			continue
		}
		c.domains = append(c.domains, d)
	}
	for i, s := range o.InternalCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			bad(fmt.Sprintf("internal_cidrs[%d]", i), "%q is not a CIDR; write it as 10.0.0.0/8", s)
			continue
		}
		c.cidrs = append(c.cidrs, p.Masked())
	}
	for i, r := range o.Sensitivity {
		p := fmt.Sprintf("sensitivity[%d]", i)
		if !ValidValue(AxisSensitivity, r.Tier) {
			bad(p+".tier", "%q is not one of %s", r.Tier, strings.Join(axisValues[AxisSensitivity], ", "))
		}
		if strings.TrimSpace(r.Match) == "" {
			bad(p+".match", "empty glob; write a path, URI or table glob such as /srv/hr/**")
			continue
		}
		c.rules = append(c.rules, catalogRule{re: globRegexp(r.Match), tier: r.Tier})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("classifier: invalid options:\n\t%s", strings.Join(errs, "\n\t"))
	}
	return c, nil
}

// globRegexp compiles a catalog glob. Every other character is literal, so
// compilation cannot fail.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?i)^")
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			if i+1 < len(rs) && rs[i+1] == '*' {
				b.WriteString(".*")
				i++
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Declared returns what o declares about a tool of an upstream, for the
// action descriptor policy reads (intercept.Interceptor.Declared): its
// capability class, action type and boundary from tools ("upstream/tool",
// else "tool"), the boundary else the upstream's zone. Empty where
// nothing is declared.
func (o *Options) Declared(upstream, tool string) (capabilityClass, actionType, boundary string) {
	t, ok := o.Tools[upstream+"/"+tool]
	if !ok {
		t = o.Tools[tool]
	}
	boundary = t.Boundary
	if boundary == "" {
		boundary = o.Upstreams[upstream].Zone
	}
	return t.CapabilityClass, t.ActionType, boundary
}

// tool returns the declaration for a tool of an upstream.
func (c *compiled) tool(upstream, name string) (ToolConfig, bool) {
	if len(c.tools) == 0 {
		return ToolConfig{}, false
	}
	if upstream != "" {
		if t, ok := c.tools[upstream+"/"+name]; ok {
			return t, true
		}
	}
	t, ok := c.tools[name]
	return t, ok
}

// Package recommend is the policy recommendation engine of RFC-010 §10: it
// reads the event corpus (policy_enforced and intent_classified events)
// and proposes changes to the policy — ADD_TOOL, REMOVE_TOOL,
// ELEVATE_CLASS, RESTRICT_BOUNDARY, SPLIT_CLASS — each with its evidence.
// It changes nothing by itself: [Apply] turns a recommendation a human
// approved into a new policy document, and [Store] keeps what was
// proposed and decided, so that a declined recommendation is not proposed
// again for 30 days.
package recommend

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/invisible"
	"github.com/sluicehq/sluice/telemetry"
)

// Type is a kind of recommendation (RFC-010 §10.3).
type Type string

const (
	// AddTool: an agent's calls to a tool are denied again and again by
	// its manifest or by the default; allow them.
	AddTool Type = "ADD_TOOL"
	// RemoveTool: a tool the policy allows by name was not called for 90
	// days and never escalated; stop allowing it.
	RemoveTool Type = "REMOVE_TOOL"
	// ElevateClass: the classifier keeps finding a tool's calls in
	// another class than the one declared; add that class.
	ElevateClass Type = "ELEVATE_CLASS"
	// RestrictBoundary: every call an agent made stayed within the
	// organisation; lower its manifest's boundary ceiling.
	RestrictBoundary Type = "RESTRICT_BOUNDARY"
	// SplitClass: one class covers tools that read and tools that
	// change things; give the latter a class of their own.
	SplitClass Type = "SPLIT_CLASS"
)

// Recommendation is one proposed change with its evidence (RFC-010 §10.4
// under Sluice's names: agent for agent_did, policy version for the
// manifest hash).
type Recommendation struct {
	ID              string    `json:"recommendation_id"`
	Type            Type      `json:"type"`
	Agent           string    `json:"agent,omitempty"`
	Tool            string    `json:"tool,omitempty"`
	CapabilityClass string    `json:"capability_class,omitempty"`
	Change          Change    `json:"proposed_change"`
	Evidence        Evidence  `json:"evidence"`
	Confidence      float64   `json:"confidence"`
	PolicyVersion   string    `json:"current_policy_version,omitempty"`
	GeneratedAt     time.Time `json:"generated_at"`
	// Summary says in one sentence what approving it does.
	Summary string `json:"summary"`
}

// Change is a proposed edit of the policy document: Path names the node
// from the policy's root (["manifests", "agent-a", "allowed_classes"]),
// Operation is add, remove or set, Value what is added, removed or set.
type Change struct {
	Path      []string `json:"path"`
	Operation string   `json:"operation"`
	Value     any      `json:"value"`
}

// Field is Path in dotted form, as RFC-010 writes it.
func (c Change) Field() string { return strings.Join(c.Path, ".") }

// Evidence is what a recommendation rests on.
type Evidence struct {
	// Count is the number of events behind it, in Window.
	Count  int    `json:"count"`
	Window string `json:"window"`
	// Reasons counts the decisions' reason codes.
	Reasons       map[string]int `json:"reasons,omitempty"`
	FirstObserved time.Time      `json:"first_observed,omitzero"`
	LastObserved  time.Time      `json:"last_observed,omitzero"`
	// ExampleTxnIDs are up to five calls to look at.
	ExampleTxnIDs []string `json:"example_txn_ids,omitempty"`
	// ClassifierVerdictConsistency is the share of classifications that
	// agree with the proposed value (ELEVATE_CLASS, SPLIT_CLASS).
	ClassifierVerdictConsistency float64 `json:"classifier_verdict_consistency,omitempty"`
	// Axes counts the classifier's values per axis, and their mean
	// confidence, over the calls behind the recommendation.
	Axes map[string]map[string]AxisCount `json:"axes,omitempty"`
	// Tools lists the tools concerned, with what was seen of each
	// (SPLIT_CLASS: their action types).
	Tools map[string]string `json:"tools,omitempty"`
	// Note says what else to look at before approving.
	Note string `json:"note,omitempty"`
}

// AxisCount is how often an axis had a value and with what mean confidence.
type AxisCount struct {
	N              int     `json:"n"`
	MeanConfidence float64 `json:"mean_confidence"`
}

// Options tune the engine; zero values take the defaults.
type Options struct {
	// Now is the clock (time.Now).
	Now func() time.Time
	// Window is how far back evidence counts (30 days).
	Window time.Duration
	// Unused is how long a tool must go uncalled for REMOVE_TOOL (90
	// days); the corpus must reach that far back.
	Unused time.Duration
	// MinEvidence is the fewest events a recommendation rests on (5).
	MinEvidence int
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) window() time.Duration { return cmp.Or(o.Window, 30*24*time.Hour) }
func (o Options) unused() time.Duration { return cmp.Or(o.Unused, 90*24*time.Hour) }
func (o Options) minEvidence() int      { return cmp.Or(o.MinEvidence, 5) }

// Engine reads events one at a time and then proposes.
type Engine struct {
	opts Options
	doc  *Doc
	now  time.Time

	first    time.Time // the oldest event seen
	denials  tallies[*tally]
	lastCall map[string]time.Time // tool the policy names -> last policy_enforced
	held     map[string]bool      // tool the policy names -> ever require_approval
	intents  tallies[*intentTally]
	bounds   map[string]*boundTally    // agent -> its allowed calls' declared boundaries
	actions  map[string]map[string]int // tool the policy names -> action type -> calls
	// named caches Doc.named for the tools seen (a bounded lot: names an
	// agent makes up are forgotten once there are too many).
	named map[string]bool
}

type pair struct{ agent, tool string } // tool is "upstream/tool"

type tally struct {
	n        int
	reasons  map[string]int
	classes  []string
	first    time.Time
	last     time.Time
	examples []string
}

func (t *tally) add(e telemetry.Event) {
	t.n++
	if t.first.IsZero() || e.Time.Before(t.first) {
		t.first = e.Time
	}
	if e.Time.After(t.last) {
		t.last = e.Time
	}
	if len(t.examples) < 5 && e.TxnID != "" {
		t.examples = append(t.examples, e.TxnID)
	}
}

type intentTally struct {
	tally
	inconsistent int
	declared     string
	verdicts     map[string]int
	axes         map[string]map[string]*axisSum
}

type axisSum struct {
	n   int
	sum float64
}

type boundTally struct {
	tally
	max     int // 0 unknown, 1 local, 2 intra-org, 3 external
	unknown int
}

// NewEngine returns an engine that proposes changes to doc.
func NewEngine(doc *Doc, opts Options) *Engine {
	return &Engine{opts: opts, doc: doc, now: opts.now(),
		denials: newTallies[*tally](), lastCall: map[string]time.Time{}, held: map[string]bool{},
		intents: newTallies[*intentTally](), bounds: map[string]*boundTally{}, actions: map[string]map[string]int{},
		named: map[string]bool{}}
}

// names reports whether the policy names tool (Doc.named).
func (e *Engine) names(tool string) bool {
	n, ok := e.named[tool]
	if !ok {
		if len(e.named) >= 2*MaxTallies {
			clear(e.named)
		}
		n = e.doc.named(tool)
		e.named[tool] = n
	}
	return n
}

func toolKey(e telemetry.Event) string {
	if e.Upstream == "" {
		return e.Tool
	}
	return e.Upstream + "/" + e.Tool
}

// cut reports whether name is one the audit store cut to its bound
// (telemetry.Bound): longer than any a rule could name.
func cut(name string) bool {
	return strings.Contains(name, telemetry.CutMark)
}

// Observe takes one event; events of other types are ignored.
func (e *Engine) Observe(ev telemetry.Event) {
	if e.first.IsZero() || ev.Time.Before(e.first) {
		e.first = ev.Time
	}
	if len(ev.Agent) > MaxNameBytes || len(ev.Upstream)+len(ev.Tool) > MaxNameBytes || cut(ev.Agent) || cut(ev.Tool) {
		return
	}
	inWindow := !ev.Time.Before(e.now.Add(-e.opts.window()))
	k := pair{ev.Agent, toolKey(ev)}
	switch ev.Type {
	case telemetry.TypePolicyEnforced:
		var p telemetry.PolicyEnforcement
		if ev.Decode(&p) != nil || p.Tool == "" {
			return
		}
		for _, t := range []string{k.tool, p.Tool} {
			if !e.names(t) {
				continue
			}
			if ev.Time.After(e.lastCall[t]) {
				e.lastCall[t] = ev.Time
			}
			if p.Decision == "require_approval" {
				e.held[t] = true
			}
		}
		if !inWindow {
			return
		}
		switch {
		case p.Decision == "deny" && (p.Reason == "manifest_class_not_allowed" || p.Reason == "default_deny"):
			t := e.denials.get(k, func() *tally { return &tally{reasons: map[string]int{}} })
			t.add(ev)
			t.reasons[p.Reason]++
			if len(p.Evidence.MatchedToolClasses) > 0 {
				t.classes = p.Evidence.MatchedToolClasses
			}
		case p.Decision == "allow" && ev.Agent != "":
			b := e.bounds[ev.Agent]
			if b == nil {
				trimBounds(e.bounds)
				b = &boundTally{}
				e.bounds[ev.Agent] = b
			}
			b.add(ev)
			switch lvl := boundaryLevel(p.BoundaryDeclared); lvl {
			case 0:
				b.unknown++
			default:
				b.max = max(b.max, lvl)
			}
		}
	case telemetry.TypeIntentClassified:
		if !inWindow {
			return
		}
		var c telemetry.IntentClassification
		if ev.Decode(&c) != nil || c.Tool == "" {
			return
		}
		t := e.intents.get(k, func() *intentTally {
			return &intentTally{verdicts: map[string]int{}, axes: map[string]map[string]*axisSum{}}
		})
		t.add(ev)
		if c.CapabilityClassDeclared != "" {
			t.declared = c.CapabilityClassDeclared
			if !c.ConsistentWithDeclaration {
				t.inconsistent++
				t.verdicts[c.CapabilityClassVerdict]++
			}
		}
		for axis, v := range c.Axes {
			m := t.axes[axis]
			if m == nil {
				m = map[string]*axisSum{}
				t.axes[axis] = m
			}
			s := m[v.Classified]
			if s == nil {
				s = &axisSum{}
				m[v.Classified] = s
			}
			s.n++
			s.sum += v.Confidence
		}
		if at, ok := c.Axes["action_type"]; ok && at.Classified != "" && e.names(k.tool) {
			m := e.actions[k.tool]
			if m == nil {
				m = map[string]int{}
				e.actions[k.tool] = m
			}
			m[at.Classified]++
		}
	}
}

func boundaryLevel(s string) int {
	switch strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(strings.TrimSpace(s))) {
	case "local":
		return 1
	case "intra-org", "intraorg":
		return 2
	case "external":
		return 3
	}
	return 0
}

var boundaryNames = [...]string{"", "local", "intra-org", "external"}

// anyAgent is the manifests key of every agent without a manifest of its
// own. An agent may name itself "*" (clientInfo, a JWT subject), but its
// calls are no evidence about every other agent: a change to
// manifests."*" is never proposed for it.
const anyAgent = "*"

// Recommendations returns what the events observed so far call for, in a
// stable order.
func (e *Engine) Recommendations() []Recommendation {
	var out []Recommendation
	out = append(out, e.addTool()...)
	out = append(out, e.removeTool()...)
	out = append(out, e.elevateClass()...)
	out = append(out, e.restrictBoundary()...)
	out = append(out, e.splitClass()...)
	for i := range out {
		r := &out[i]
		r.ID = recommendationID(r)
		r.GeneratedAt = e.now
		r.PolicyVersion = e.doc.Version
		r.Evidence.Window = e.opts.window().String()
	}
	// Bounded before the check below, which compiles the policy twice a
	// proposal.
	out = keepStrongest(out)
	// A class added to tools must not let anyone do more (ErrWidens):
	// such a proposal is not made, for approving it would be refused.
	out = slices.DeleteFunc(out, func(r Recommendation) bool {
		if e.doc.src == nil || classChanged(r) == nil {
			return false
		}
		_, err := Apply(e.doc.src, r)
		return errors.Is(err, ErrWidens)
	})
	slices.SortFunc(out, func(a, b Recommendation) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// recommendationID is the same for the same finding: type, agent and the
// change, not the evidence, which grows.
func recommendationID(r *Recommendation) string {
	v, _ := json.Marshal(r.Change.Value)
	sum := sha256.Sum256([]byte(string(r.Type) + "\x00" + r.Agent + "\x00" + r.Change.Field() + "\x00" + r.Change.Operation + "\x00" + string(v)))
	return "rec_" + hex.EncodeToString(sum[:8])
}

// confidence grows with the evidence: 0.5 at the minimum, 0.9 at four
// times it.
func (e *Engine) confidence(n int) float64 {
	x := float64(n) / float64(e.opts.minEvidence())
	return math.Round(100*(1-0.5/math.Pow(x, 1.16))) / 100
}

func sortedKeys[V any](m map[pair]V) []pair {
	keys := make([]pair, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b pair) int { return cmp.Or(cmp.Compare(a.agent, b.agent), cmp.Compare(a.tool, b.tool)) })
	return keys
}

// MaxAddToolPerAgent bounds an agent's ADD_TOOL proposals: a tool it calls
// that no rule allows (a made-up name, say) is denied, and five calls each
// to as many names as it likes would otherwise bury every other proposal.
// Those with the most denials are kept.
const MaxAddToolPerAgent = 20

func (e *Engine) addTool() []Recommendation {
	// The candidates of each agent, most evidence first.
	byAgent := map[string][]pair{}
	for k, t := range e.denials.m {
		if t.n < e.opts.minEvidence() || k.agent == "" || k.agent == anyAgent {
			continue
		}
		byAgent[k.agent] = append(byAgent[k.agent], k)
	}
	kept := map[pair]bool{}
	for _, ks := range byAgent {
		slices.SortFunc(ks, func(a, b pair) int {
			return cmp.Or(cmp.Compare(e.denials.m[b].n, e.denials.m[a].n), cmp.Compare(a.tool, b.tool))
		})
		for _, k := range ks[:min(len(ks), MaxAddToolPerAgent)] {
			kept[k] = true
		}
	}
	var out []Recommendation
	for _, k := range sortedKeys(e.denials.m) {
		t := e.denials.m[k]
		if !kept[k] {
			continue
		}
		ev := Evidence{Count: t.n, Reasons: t.reasons, FirstObserved: t.first, LastObserved: t.last, ExampleTxnIDs: t.examples}
		r := Recommendation{Type: AddTool, Agent: k.agent, Tool: k.tool, Evidence: ev, Confidence: e.confidence(t.n)}
		if t.reasons["manifest_class_not_allowed"] >= t.reasons["default_deny"] {
			var missing []string
			for _, c := range t.classes {
				if !slices.Contains(e.doc.Manifests[k.agent].AllowedClasses, c) {
					missing = append(missing, c)
				}
			}
			if len(missing) == 0 {
				continue // a tool without a class: a manifest cannot name it
			}
			r.CapabilityClass = missing[0]
			r.Change = Change{Path: []string{"manifests", k.agent, "allowed_classes"}, Operation: "add", Value: missing}
			r.Summary = fmt.Sprintf("let %s call %s: add %s to its manifest's allowed_classes (%d denials)", invisible.Name(k.agent), k.tool, strings.Join(missing, ", "), t.n)
		} else {
			upstream, tool, _ := strings.Cut(k.tool, "/")
			if tool == "" {
				upstream, tool = "", upstream
			}
			match := map[string]any{"match_tool": tool}
			if upstream != "" {
				match["upstream"] = upstream
			}
			rule := map[string]any{"match": match, "when": fmt.Sprintf("agent == %q", k.agent), "decision": "allow",
				"reason": fmt.Sprintf("%s may call %s (approved recommendation)", k.agent, k.tool)}
			r.Change = Change{Path: []string{"rules"}, Operation: "add", Value: rule}
			r.Summary = fmt.Sprintf("let %s call %s: a rule allowing it for this agent (%d default denials)", invisible.Name(k.agent), k.tool, t.n)
		}
		out = append(out, r)
	}
	return out
}

func (e *Engine) removeTool() []Recommendation {
	cutoff := e.now.Add(-e.opts.unused())
	if e.first.IsZero() || e.first.After(cutoff) {
		return nil // the corpus does not reach back far enough to say "never"
	}
	var out []Recommendation
	for _, tool := range e.doc.Allow {
		if e.held[tool] || !e.lastCall[tool].Before(cutoff) {
			continue
		}
		ev := Evidence{Count: 0, LastObserved: e.lastCall[tool],
			Note: fmt.Sprintf("no call in the %s before %s and never held for approval", e.opts.unused(), e.now.Format(time.DateOnly))}
		out = append(out, Recommendation{Type: RemoveTool, Tool: tool, Confidence: 0.8, Evidence: ev,
			Change:  Change{Path: []string{"allow"}, Operation: "remove", Value: tool},
			Summary: fmt.Sprintf("stop allowing %s by name: unused for %s", tool, e.opts.unused())})
	}
	return out
}

func axesOf(t *intentTally) map[string]map[string]AxisCount {
	out := map[string]map[string]AxisCount{}
	for axis, m := range t.axes {
		out[axis] = map[string]AxisCount{}
		for v, s := range m {
			out[axis][v] = AxisCount{N: s.n, MeanConfidence: math.Round(100*s.sum/float64(s.n)) / 100}
		}
	}
	return out
}

func (e *Engine) elevateClass() []Recommendation {
	var out []Recommendation
	for _, k := range sortedKeys(e.intents.m) {
		t := e.intents.m[k]
		if t.inconsistent < e.opts.minEvidence() || float64(t.inconsistent) < 0.8*float64(t.n) {
			continue
		}
		best, bn := "", 0
		for v, n := range t.verdicts {
			if n > bn || n == bn && v < best {
				best, bn = v, n
			}
		}
		consistency := float64(bn) / float64(t.inconsistent)
		if best == "" || best == t.declared || consistency < 0.8 || slices.Contains(e.doc.ToolClasses[k.tool], best) {
			continue
		}
		ev := Evidence{Count: t.n, FirstObserved: t.first, LastObserved: t.last, ExampleTxnIDs: t.examples,
			ClassifierVerdictConsistency: math.Round(100*consistency) / 100, Axes: axesOf(t),
			Note: fmt.Sprintf("declared %s; %d of %d classifications disagree", t.declared, t.inconsistent, t.n)}
		out = append(out, Recommendation{Type: ElevateClass, Agent: k.agent, Tool: k.tool, CapabilityClass: best,
			Confidence: math.Round(100*consistency*e.confidence(t.inconsistent)/0.9) / 100, Evidence: ev,
			Change:  Change{Path: []string{"tool_classes", k.tool}, Operation: "add", Value: best},
			Summary: fmt.Sprintf("class %s as %s too: the classifier finds it there (%s declared)", k.tool, best, t.declared)})
	}
	for i := range out {
		out[i].Confidence = min(out[i].Confidence, 1)
	}
	return out
}

func (e *Engine) restrictBoundary() []Recommendation {
	agents := make([]string, 0, len(e.bounds))
	for a := range e.bounds {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	var out []Recommendation
	for _, a := range agents {
		b := e.bounds[a]
		// The ceiling that applies: the agent's own manifest's, or the
		// default's, which a manifest of its own would replace.
		m, ok := e.doc.Manifests[a]
		if !ok {
			m = e.doc.Manifests[anyAgent]
		}
		ceiling := boundaryLevel(m.BoundaryCeiling)
		if a == anyAgent || b.n < e.opts.minEvidence() || b.unknown > 0 || b.max == 0 || b.max >= 3 || (ceiling != 0 && ceiling <= b.max) {
			continue
		}
		ev := Evidence{Count: b.n, FirstObserved: b.first, LastObserved: b.last, ExampleTxnIDs: b.examples,
			Note: fmt.Sprintf("every allowed call declared a boundary no wider than %s", boundaryNames[b.max])}
		out = append(out, Recommendation{Type: RestrictBoundary, Agent: a, Confidence: e.confidence(b.n), Evidence: ev,
			Change:  Change{Path: []string{"manifests", a, "boundary_ceiling"}, Operation: "set", Value: boundaryNames[b.max]},
			Summary: fmt.Sprintf("lower %s's boundary ceiling to %s: none of its %d allowed calls went beyond", invisible.Name(a), boundaryNames[b.max], b.n)})
	}
	return out
}

var mutating = map[string]bool{"Write": true, "Execute": true, "Provision": true, "Orchestrate": true}

func (e *Engine) splitClass() []Recommendation {
	classes := map[string][]string{} // class -> tool keys
	for tool, cs := range e.doc.ToolClasses {
		for _, c := range cs {
			classes[c] = append(classes[c], tool)
		}
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	slices.Sort(names)
	var out []Recommendation
	for _, c := range names {
		tools := classes[c]
		slices.Sort(tools)
		seen := map[string]string{}
		var reads, writes []string
		var n, agree int
		for _, tool := range tools {
			at, cnt, total := majority(e.actionsOf(tool))
			if total < 3 {
				continue
			}
			n += total
			agree += cnt
			seen[tool] = at
			switch {
			case at == "Read":
				reads = append(reads, tool)
			case mutating[at]:
				writes = append(writes, tool)
			}
		}
		split := c + ":write"
		if len(reads) == 0 || len(writes) == 0 || strings.HasSuffix(c, ":write") {
			continue
		}
		ev := Evidence{Count: n, Tools: seen, ClassifierVerdictConsistency: math.Round(100*float64(agree)/float64(n)) / 100,
			Note: fmt.Sprintf("%s covers tools that read (%s) and tools that change things (%s); the latter also get %s, so rules can tell them apart — rules on %s still apply", c, strings.Join(reads, ", "), strings.Join(writes, ", "), split, c)}
		out = append(out, Recommendation{Type: SplitClass, CapabilityClass: c, Confidence: e.confidence(n / 2), Evidence: ev,
			Change:  Change{Path: []string{"tool_classes"}, Operation: "add", Value: map[string]any{"class": split, "tools": writes}},
			Summary: fmt.Sprintf("split %s: give %s the class %s", c, strings.Join(writes, ", "), split)})
	}
	return out
}

// actionsOf counts a tool key's action types; a bare key (no upstream)
// sums every upstream's tool of that name.
func (e *Engine) actionsOf(tool string) map[string]int {
	if strings.Contains(tool, "/") {
		return e.actions[tool]
	}
	sum := map[string]int{}
	for k, m := range e.actions {
		if k == tool || strings.HasSuffix(k, "/"+tool) {
			for v, n := range m {
				sum[v] += n
			}
		}
	}
	return sum
}

func majority(m map[string]int) (best string, n, total int) {
	for v, c := range m {
		total += c
		if c > n || c == n && v < best {
			best, n = v, c
		}
	}
	return best, n, total
}

package recommend

import (
	"cmp"
	"slices"
	"strings"
)

// The engine keeps a tally for every agent and tool it sees denied or
// classified, and tool names are the agents' to make up (a call to a tool
// no rule allows is denied and recorded all the same), as are agent names
// without authentication. Unbounded, an agent that called a million
// made-up names had every run of the engine hold some 2 KB for each, 2 GB
// in the serving gateway (the schedule runs at start too). So:
//
//   - an agent keeps the tallies of at most MaxToolsPerAgent tools of
//     each kind (denials, classifications), those with the most events:
//     past twice that many the rest are dropped, so names it makes up
//     crowd out only its own proposals;
//   - the engine keeps at most MaxTallies of each kind in all, the same
//     way, for agents made up too;
//   - when a tool was last called, and the action types the classifier
//     found, are kept only for the tools REMOVE_TOOL and SPLIT_CLASS can
//     ask about: those the policy names.
//
// A tally dropped and seen again starts over, so a finding can need more
// than MinEvidence events while an agent floods.
const (
	MaxToolsPerAgent = 1000
	MaxTallies       = 10_000
	// MaxNameBytes is the longest agent or tool name tallied; the
	// events of longer ones (a made-up name as long as a request body)
	// are passed over, as are the names the audit store cut to
	// telemetry.MaxRecordedName. MCP names tools in at most 128
	// characters.
	MaxNameBytes = 4 << 10
	// MaxPerType bounds a run's recommendations of each type, those
	// with the most evidence kept: without authentication an agent is
	// the name its client gives, and MaxAddToolPerAgent bounds one name
	// only (a client naming itself anew every few calls had a proposal
	// made for each name).
	MaxPerType = 200
)

// keepStrongest keeps, of each type of recs, the MaxPerType with the most
// evidence.
func keepStrongest(recs []Recommendation) []Recommendation {
	slices.SortStableFunc(recs, func(a, b Recommendation) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(b.Evidence.Count, a.Evidence.Count),
			cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.ID, b.ID))
	})
	kept := map[Type]int{}
	return slices.DeleteFunc(recs, func(r Recommendation) bool {
		kept[r.Type]++
		return kept[r.Type] > MaxPerType
	})
}

type counted interface{ count() int }

func (t *tally) count() int { return t.n }

// tallies are the tallies of one kind, by agent and tool, bounded as
// above.
type tallies[V counted] struct {
	m        map[pair]V
	perAgent map[string]int
}

func newTallies[V counted]() tallies[V] {
	return tallies[V]{m: map[pair]V{}, perAgent: map[string]int{}}
}

// get returns k's tally, made by fresh if there is none; room is made
// first by dropping the tallies with the fewest events.
func (t *tallies[V]) get(k pair, fresh func() V) V {
	if v, ok := t.m[k]; ok {
		return v
	}
	if t.perAgent[k.agent] >= 2*MaxToolsPerAgent {
		t.trim(func(p pair) bool { return p.agent == k.agent }, MaxToolsPerAgent)
	}
	if len(t.m) >= 2*MaxTallies {
		t.trim(func(pair) bool { return true }, MaxTallies)
	}
	v := fresh()
	t.m[k] = v
	t.perAgent[k.agent]++
	return v
}

// trim keeps, of the tallies whose key is in, the keep with the most
// events.
func (t *tallies[V]) trim(in func(pair) bool, keep int) {
	type entry struct {
		k pair
		n int
	}
	var es []entry
	for k, v := range t.m {
		if in(k) {
			es = append(es, entry{k, v.count()})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.k.agent, b.k.agent), cmp.Compare(a.k.tool, b.k.tool))
	})
	for _, e := range es[min(keep, len(es)):] {
		k := e.k
		delete(t.m, k)
		if t.perAgent[k.agent]--; t.perAgent[k.agent] == 0 {
			delete(t.perAgent, k.agent)
		}
	}
}

// trimBounds keeps the MaxTallies agents with the most allowed calls once
// there are twice as many.
func trimBounds(m map[string]*boundTally) {
	if len(m) < 2*MaxTallies {
		return
	}
	agents := make([]string, 0, len(m))
	for a := range m {
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(a, b string) int { return cmp.Or(cmp.Compare(m[b].n, m[a].n), cmp.Compare(a, b)) })
	for _, a := range agents[MaxTallies:] {
		delete(m, a)
	}
}

// named reports whether the policy names tool (a tool key, upstream/tool,
// or a bare name) where REMOVE_TOOL (the allow list) or SPLIT_CLASS
// (tool_classes, where a bare key takes in the tool of every upstream)
// looks for it.
func (d *Doc) named(tool string) bool {
	if slices.Contains(d.Allow, tool) {
		return true
	}
	if _, ok := d.ToolClasses[tool]; ok {
		return true
	}
	if i := strings.LastIndexByte(tool, '/'); i >= 0 {
		_, ok := d.ToolClasses[tool[i+1:]]
		return ok
	}
	return false
}

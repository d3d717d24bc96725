package policy

import (
	"maps"
	"slices"
)

// Counts returns how many rules and route rules p has, for start-up
// summaries and reports.
func (p *Policy) Counts() (rules, routeRules int) {
	return len(p.rules), len(p.routes)
}

// Upstreams returns the upstreams p names, sorted, each once: in its
// rules' matchers (upstream and pinned tools) and in its pinned
// tool_classes. A decision about a tool of any other upstream is the one
// it gets on an upstream p does not name. A nil *Policy names none.
func (p *Policy) Upstreams() []string {
	if p == nil {
		return nil
	}
	seen := map[string]bool{}
	for k := range p.classes {
		if k.upstream != "" {
			seen[k.upstream] = true
		}
	}
	for _, r := range p.rules {
		for _, u := range r.m.upstreams {
			seen[u] = true
		}
		for _, k := range r.m.pinned {
			seen[k.upstream] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// CappedAgents returns the agents whose manifest sets a boundary_ceiling
// below external, sorted ("*" for the default manifest). Their calls
// compare the boundary declared for each tool with it.
func (p *Policy) CappedAgents() []string {
	if p == nil {
		return nil
	}
	var agents []string
	for a, m := range p.manifests {
		if m.ceiling != boundaryUnknown && m.ceiling < boundaryExternal {
			agents = append(agents, a)
		}
	}
	slices.Sort(agents)
	return agents
}

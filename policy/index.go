package policy

// Rules are found through an index instead of being scanned: each rule is
// filed under the most selective thing its matcher names (its tools, else
// its classes, else its upstreams, else "any call"), and a call collects
// the few lists filed under its tool name, its pinned name, each of its
// classes and its upstream. Every list is in rule order, so the first rule
// that applies in file order is found by walking each list only up to the
// best hit so far.

// slots holds rule positions by verdict slot (deny, require_approval,
// allow) and, in slotRoute, route rules by their deny side.
type slots [nSlots][]int32

type index struct {
	bare     map[string]*slots
	pinned   map[toolKey]*slots
	class    map[string]*slots
	upstream map[string]*slots
	any      slots
}

func (p *Policy) buildIndex() {
	ix := &p.idx
	ix.bare = map[string]*slots{}
	ix.pinned = map[toolKey]*slots{}
	ix.class = map[string]*slots{}
	ix.upstream = map[string]*slots{}
	put := func(s *slots, slot int, i int32) {
		if l := s[slot]; len(l) > 0 && l[len(l)-1] == i {
			return // the same name or class twice in one matcher
		}
		s[slot] = append(s[slot], i)
	}
	add := func(slot int, i int32, m *matcher) {
		switch {
		case len(m.tools)+len(m.pinned) > 0:
			for _, t := range m.tools {
				put(bucket(ix.bare, t), slot, i)
			}
			for _, k := range m.pinned {
				put(bucket(ix.pinned, k), slot, i)
			}
		case len(m.anyOf) > 0:
			for _, c := range m.anyOf {
				put(bucket(ix.class, c), slot, i)
			}
		case len(m.allOf) > 0:
			put(bucket(ix.class, m.allOf[0]), slot, i)
		case len(m.upstreams) > 0:
			for _, u := range m.upstreams {
				put(bucket(ix.upstream, u), slot, i)
			}
		default:
			put(&ix.any, slot, i)
		}
	}
	for i, r := range p.rules {
		add(r.slot, int32(i), &r.m)
	}
	for i, r := range p.routes {
		add(slotRoute, int32(i), &r.deny)
	}
}

func bucket[K comparable](m map[K]*slots, k K) *slots {
	s := m[k]
	if s == nil {
		s = new(slots)
		m[k] = s
	}
	return s
}

type via uint8

const (
	viaTool via = iota
	viaPinned
	viaClass
	viaOther
)

// source is one index list a call collected.
type source struct {
	s     *slots
	via   via
	class string // for viaClass
}

// sources appends to buf the index lists that can hold rules for a call.
func (p *Policy) sources(buf []source, upstream, name string, classes []string) []source {
	ix := &p.idx
	if s := ix.bare[name]; s != nil {
		buf = append(buf, source{s: s, via: viaTool})
	}
	if len(ix.pinned) > 0 {
		if s := ix.pinned[toolKey{upstream, name}]; s != nil {
			buf = append(buf, source{s: s, via: viaPinned})
		}
	}
	if len(ix.class) > 0 {
		for _, c := range classes {
			if s := ix.class[c]; s != nil {
				buf = append(buf, source{s: s, via: viaClass, class: c})
			}
		}
	}
	if len(ix.upstream) > 0 {
		if s := ix.upstream[upstream]; s != nil {
			buf = append(buf, source{s: s, via: viaOther})
		}
	}
	return append(buf, source{s: &ix.any, via: viaOther})
}

// duplicate reports whether a rule reached through src is also reached
// through another list of the same call, which is then the one that
// counts: a rule naming both t and up/t counts through t, and a rule with
// several of the call's classes counts through the first of them.
func (src source) duplicate(m *matcher, name string, classes []string) bool {
	switch src.via {
	case viaPinned:
		for _, t := range m.tools {
			if t == name {
				return true
			}
		}
	case viaClass:
		if len(m.anyOf) == 0 {
			return false
		}
		for _, c := range classes {
			for _, a := range m.anyOf {
				if a == c {
					return c != src.class
				}
			}
		}
	}
	return false
}

package policy

// ReadsArguments reports whether a decision about tool on upstream may
// depend on the call's arguments: whether a rule that can match the tool
// has a condition that reads args. Replaying calls whose arguments were
// not recorded, such decisions cannot be reproduced. A nil *Policy reads
// nothing.
func (p *Policy) ReadsArguments(upstream, tool string) bool {
	return p.anyMatching(upstream, tool, func(c *condition) bool { return c.args })
}

// Conditional reports whether a decision about tool on upstream may turn
// on a rule's condition, whatever it reads (arguments, the principal, the
// classifier's advice, the session): whether a rule that can match the
// tool has one. A nil *Policy has none.
func (p *Policy) Conditional(upstream, tool string) bool {
	return p.anyMatching(upstream, tool, func(*condition) bool { return true })
}

// anyMatching reports whether a rule that can match tool on upstream has a
// condition of which is reports true.
func (p *Policy) anyMatching(upstream, tool string, is func(*condition) bool) bool {
	if p == nil {
		return false
	}
	classes, _ := p.lookup(upstream, tool)
	var buf [12]source
	for _, src := range p.sources(buf[:0], upstream, tool, classes) {
		for _, slot := range []int{slotDeny, slotApproval, slotAllow} {
			for _, i := range src.s[slot] {
				if r := p.rules[i]; r.when != nil && is(r.when) && r.m.matches(upstream, tool, classes) {
					return true
				}
			}
		}
	}
	return false
}

// ReadsClassification reports whether any rule's condition reads
// classification.*: when none does, a decision with the classifier's
// attributes is the decision without them.
func (p *Policy) ReadsClassification() bool {
	if p == nil {
		return false
	}
	for _, r := range p.rules {
		if r.when != nil && r.when.classification {
			return true
		}
	}
	return false
}

// ReadsClassification is the served policy's.
func (w *Watcher) ReadsClassification() bool { return w.Policy().ReadsClassification() }

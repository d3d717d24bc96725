package policy

// Counts returns how many rules and route rules p has, for start-up
// summaries and reports.
func (p *Policy) Counts() (rules, routeRules int) {
	return len(p.rules), len(p.routes)
}

package policy

import (
	"strings"
	"testing"
)

// A rule naming a carry (mcp:completion/complete, pinned or not) under a
// policy with tool_classes was warned unclassified_tool, "class rules,
// route rules and manifests cannot see it": they never decide a carry,
// which only rules naming it do, so the warning asked for a class that
// changes nothing; config validate and serve now give it too.
func TestValidateCarryNotUnclassified(t *testing.T) {
	p := mustCompile(t, `
tool_classes: {docs/search: [source:internal]}
deny: ["mcp:completion/complete", "docs/mcp:resources/subscribe"]
rules:
  - {id: pay, match: {match_tool: docs/pay}, decision: deny}
`)
	var unclassified []string
	for _, w := range p.Validate() {
		if w.Code == WarnUnclassifiedTool {
			unclassified = append(unclassified, w.Msg)
		}
	}
	for _, m := range unclassified {
		if strings.Contains(m, "mcp:") {
			t.Errorf("a carry warned: %s", m)
		}
	}
	if len(unclassified) != 1 || !strings.Contains(unclassified[0], "docs/pay") {
		t.Errorf("unclassified_tool warnings %q, want only docs/pay's", unclassified)
	}
}

package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// The README names a carry in a rule as match_tool: mcp:completion/complete,
// or pinned, docs/mcp:completion/complete. The unpinned name was split at
// its first slash like upstream/tool, a rule for the tool "complete" of an
// upstream named "mcp:completion": deny: [mcp:completion/complete] denied
// no completion, on any upstream.
func TestAttackUnpinnedCarryName(t *testing.T) {
	for _, src := range []string{
		"default: allow\ndeny: [\"mcp:completion/complete\"]\n",
		"default: allow\nrules:\n  - {id: r, match: {match_tool: \"mcp:completion/complete\"}, decision: deny}\n",
	} {
		p := mustCompile(t, src)
		for _, up := range []string{"web", "docs"} {
			if dec := intercept.Decide(context.Background(), p, carry(up, nil)); dec.Verdict != intercept.Deny {
				t.Errorf("%s: a completion on %s: got %s/%s, want deny", src, up, dec.Verdict, dec.Reason)
			}
		}
		if got := p.Upstreams(); len(got) != 0 {
			t.Errorf("%s: the policy names upstreams %v, want none", src, got)
		}
	}
}

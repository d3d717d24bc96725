package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// Policy matches tool names exactly, while rate_limits' tool filters are
// globs: an operator who wrote deny: ["fs/*"] (or delete_*, or a
// tool_classes key fs/*) meaning every tool of the upstream fs got a rule
// for one tool named "*", and under default: allow every tool of fs was
// allowed. A tool name with a * (outside a read's prefix) is a load error
// now, naming what to write instead.
func TestAttackToolGlobIsNoGlob(t *testing.T) {
	for _, src := range []string{
		"default: allow\ndeny: [\"fs/*\"]\n",
		"default: allow\ndeny: [\"delete_*\"]\n",
		"default: allow\nrules:\n  - {id: r, match: {match_tool: \"fs/*\"}, decision: deny}\n",
		"default: allow\ntool_classes: {\"fs/*\": [sink:x]}\nrules:\n  - {id: r, match: {match_any_class: [sink:x]}, decision: deny}\n",
		"default: allow\ntool_classes: {\"*\": [sink:x]}\nrules:\n  - {id: r, match: {match_any_class: [sink:x]}, decision: deny}\n",
	} {
		p, err := Compile([]byte(src), "p.yaml", Options{})
		if err != nil {
			if !strings.Contains(err.Error(), "upstream:") {
				t.Errorf("%s: the error does not say what to write: %v", src, err)
			}
			continue
		}
		d := call("rm")
		d.Upstream = "fs"
		if got, _ := p.Decide(context.Background(), d); got.Verdict == intercept.Allow {
			t.Errorf("%s: fs/rm is allowed (%s): the * was read as a tool's name", src, got.Reason)
		}
	}
}

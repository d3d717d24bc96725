package policy

import (
	"strings"
	"testing"
)

// A deny or approval rule that tolerates other types by a guard naming
// some number types (`type(args.amount) in [int, double]`) lets through
// the numbers of the types it leaves out, which an upstream reads as
// numbers all the same: 10000000000000000000 is a uint (the only type of
// an integer above int64), 5000.5 and 1e4 doubles. `sluice policy
// validate` says so; an allow rule's guard only allows less, and is left
// alone.
func TestValidateNumberGuardMissingType(t *testing.T) {
	for _, c := range []struct {
		decision, when string
		warn           bool
	}{
		{"deny", `type(args.amount) in [int, double] && args.amount > 1000`, true},
		{"require_approval", `type(args.amount) == int && args.amount > 1000`, true},
		{"deny", `(type(args.a) == int || type(args.a) == double) && args.a > 1`, true},
		{"deny", `type(args.amount) in [int, uint, double] && args.amount > 1000`, false},
		{"deny", `type(args.amount) in [double, uint, int] && args.amount > 1000`, false},
		{"deny", `args.amount > 1000`, false},
		{"deny", `type(args.to) == string && args.to.endsWith("@evil.test")`, false},
		{"allow", `type(args.amount) == int && args.amount < 1000`, false},
	} {
		p := mustCompile(t, `
tool_classes: {pay: [sink:payment]}
rules:
  - id: r
    match: {match_tool: pay}
    when: '`+c.when+`'
    decision: `+c.decision+`
`)
		var got []Warning
		for _, w := range p.Validate() {
			if w.Code == WarnNumberGuard {
				got = append(got, w)
			}
		}
		if (len(got) > 0) != c.warn {
			t.Errorf("%s when %s: warnings %v, want one: %v", c.decision, c.when, got, c.warn)
		}
		if len(got) > 0 && !strings.Contains(got[0].Msg, "uint") {
			t.Errorf("the warning does not name the missing type: %s", got[0])
		}
	}
}

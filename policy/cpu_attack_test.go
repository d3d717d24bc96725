package policy

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/costratio"
)

// TestAttackVariantPathFlood: before a condition that reads a name
// through a comprehension's variable (x.path in args.items.exists(x, …))
// runs, every object of the arguments is checked for case variants of
// that name, outside CEL's cost limit. The walk made each member's path
// (the names above it joined) whether or not it was looked up: one long
// member name over an object of many members cost the name's length for
// each, 12 s to decide one 1 MiB call (4 MiB calls are let in). The walk
// must cost about what deciding the call under rules that do not look at
// names does.
func TestAttackVariantPathFlood(t *testing.T) {
	anywhere := atkCompile(t, `
default: allow
rules:
  - {id: r, match: {match_tool: sync}, when: 'has(args.items) && args.items.exists(x, x.path == "/etc")', decision: deny}
`)
	plain := atkCompile(t, `
default: allow
rules:
  - {id: r, match: {match_tool: sync}, when: 'has(args.name) && args.name == "x"', decision: deny}
`)
	const n = 256 << 10
	var b strings.Builder
	b.WriteString(`{"` + strings.Repeat("k", n/2) + `":{`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`}}`)
	args := b.String()
	decide := func(p *Policy) func() {
		d := call("sync")
		d.Parameters = jsontext.Value(args)
		return func() { p.Decide(context.Background(), d) }
	}
	ratio, walked, base := costratio.Of(decide(anywhere), decide(plain))
	t.Logf("walked: %v; plain: %v; ratio %.1f", walked, base, ratio)
	if ratio > 20 {
		t.Errorf("a %d-byte name over many members took %v to decide, %.0f times the %v of rules that read no names anywhere (want the path made only where it is looked up)", n/2, walked, ratio, base)
	}

	// What the walk is for still holds: a case variant of the name read,
	// at any depth, is refused; the name itself is not.
	for _, c := range []struct {
		args string
		want intercept.Verdict
	}{
		{`{"items":[{"path":"/etc"}]}`, intercept.Deny},
		{`{"items":[{"path":"/srv"}]}`, intercept.Allow},
		{`{"items":[{"PATH":"/etc","path":"/srv"}]}`, intercept.Deny},
		{`{"a":{"b":{"Path":"/etc"}},"items":[]}`, intercept.Deny},
	} {
		d := call("sync")
		d.Parameters = jsontext.Value(c.args)
		if got, _ := anywhere.Decide(context.Background(), d); got.Verdict != c.want {
			t.Errorf("%s: got %s/%s, want %s", c.args, got.Verdict, got.Reason, c.want)
		}
	}
}

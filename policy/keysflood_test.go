package policy

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/costratio"
)

// TestAttackKeyScanFlood: the keys of the arguments a condition iterates
// are checked for case variants before CEL runs, outside its cost limit.
// Trying each literal at every offset of every key costs
// len(key)·len(literal): one call with a 1 MiB key held a decision for
// seconds (and every literal of an opaque condition multiplies it), for
// the price of sending 1 MiB. The check must be one pass per key.
func TestAttackKeyScanFlood(t *testing.T) {
	lit := strings.Repeat("confidential-export-target-", 80) // 2160 bytes
	p := atkCompile(t, `
default: allow
rules:
  - {id: contains, match: {match_tool: login}, when: 'args.exists(k, k.contains("`+lit+`"))', decision: deny}
  - {id: opaque, match: {match_tool: sync}, when: 'args.exists(k, k == args.name) || has(args.mode) && args.mode == "`+lit+`"', decision: deny}
`)
	// Not a time but a ratio, so that a loaded machine (or -race) slows
	// both sides alike: deciding the same 1 MiB key under these rules
	// against under rules that never look at keys. One pass per key costs
	// a few times that; trying the 2,160-byte literal at every offset
	// costs thousands of times it. The least of three runs of each.
	plain := atkCompile(t, `
default: allow
rules:
  - {id: contains, match: {match_tool: login}, when: 'has(args.name) && args.name == "`+lit+`"', decision: deny}
  - {id: opaque, match: {match_tool: sync}, when: 'has(args.name) && args.name == "`+lit+`"', decision: deny}
`)
	key := strings.Repeat("a", 1<<20)
	decide := func(p *Policy, tool string) func() {
		d := call(tool)
		d.Parameters = jsontext.Value(`{"` + key + `": 1, "name": "x"}`)
		return func() { p.Decide(context.Background(), d) }
	}
	for _, tool := range []string{"login", "sync"} {
		if ratio, scanned, base := costratio.Of(decide(p, tool), decide(plain, tool)); ratio > 50 {
			t.Errorf("%s: a 1 MiB key took %v to decide, %.0f times the %v of rules that do not look at keys (want one pass per key)", tool, scanned, ratio, base)
		}
	}
	// What the check is for still holds: a key holding the literal in
	// another case is refused, the literal itself is not.
	for _, c := range []struct {
		tool, key string
		want      intercept.Verdict
	}{
		{"login", "x" + strings.ToUpper(lit), intercept.Deny},
		{"login", "x" + lit, intercept.Deny},
		{"login", "x", intercept.Allow},
		{"sync", "y" + strings.ToUpper(lit), intercept.Deny},
		{"sync", "y", intercept.Allow},
	} {
		d := call(c.tool)
		d.Parameters = jsontext.Value(`{"` + c.key + `": 1, "name": "x"}`)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != c.want {
			t.Errorf("%s %.20q…: got %s/%s, want %s", c.tool, c.key, got.Verdict, got.Reason, c.want)
		}
	}
}

// TestKeyScanSameAnswers: the one-pass search answers as trying the
// literal at every offset does, for keys and literals in any case, with
// runes whose case folding leaves ASCII (K, ſ) and repeats.
func TestKeyScanSameAnswers(t *testing.T) {
	alphabet := []rune{'a', 'A', 'b', 'B', 'k', 'K', '\u212a', 's', 'S', '\u017f', 'é', 'É', '-'}
	str := func(r *rand.Rand, n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		k, lit := str(r, r.IntN(12)), str(r, 1+r.IntN(4))
		for _, op := range []keyOp{keyContains, keyAnywhere} {
			tt := litTables(keyTest{op: op, lit: lit})
			want := !strings.Contains(k, lit) && slowFoldAnywhere(k, lit, false)
			if op == keyAnywhere {
				want = slowFoldAnywhere(k, lit, true)
			}
			if got := tt.passesOver(k); got != want {
				t.Fatalf("op %d key %q lit %q: got %v, want %v", op, k, lit, got, want)
			}
		}
	}
}

// slowFoldAnywhere is the scan at every offset.
func slowFoldAnywhere(k, lit string, inexact bool) bool {
	for i := range k {
		end := i
		n := utf8.RuneCountInString(lit)
		for ; n > 0 && end < len(k); n-- {
			_, size := utf8.DecodeRuneInString(k[end:])
			end += size
		}
		if n > 0 {
			continue
		}
		if strings.EqualFold(k[i:end], lit) && (!inexact || k[i:end] != lit) {
			return true
		}
	}
	return false
}

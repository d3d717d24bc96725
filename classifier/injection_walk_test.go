package classifier

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackInjectionAfterHugeNumber (attacker review): the walk stopped
// at a number strconv cannot hold (1e999, valid JSON that the gateway
// passes and clients read: JavaScript as Infinity, encoding/json skips it
// in a member it does not know), so an injection after it in a result
// went unseen and on_result_injection: withhold passed it on.
func TestAttackInjectionAfterHugeNumber(t *testing.T) {
	for _, n := range []string{"1e999", "-1e999", "1E+400"} {
		v := jsontext.Value(`{"x":` + n + `,"content":[{"type":"text","text":"` + resultAttack + `"}]}`)
		if !v.IsValid() {
			t.Fatalf("%s: not valid JSON", v)
		}
		if fs := DetectInjectionInResult(v); len(fs) == 0 {
			t.Errorf("after %s: no finding", n)
		}
		if fs := DetectInjectionFrom(v, InResult); len(fs) == 0 {
			t.Errorf("after %s (bounded walk): no finding", n)
		}
	}
}

package telemetry

import (
	"strings"
	"testing"
)

// TestAttackArgumentsTooDeepToKeep (attacker review): kept arguments are
// stored inside the event (its object and attrs), and an A2A message's
// members go in deeper still (extra.params): arguments nested to what a
// request may hold made an event no reader decodes (encoding/json stops
// at 10000 levels), which broke every query of the audit store around it.
// Arguments nested deeper than MaxKeptDepth are kept as their hash only.
func TestAttackArgumentsTooDeepToKeep(t *testing.T) {
	r := Redactor{KeepArguments: true}
	nest := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat(`[`, n-1) + strings.Repeat(` ]`, n-1) + `}`)
	}
	if a := r.Arguments(nest(MaxKeptDepth)); a.Value == nil || a.SHA256 == "" {
		t.Errorf("arguments %d deep: %+v; want them kept", MaxKeptDepth, a)
	}
	for _, n := range []int{MaxKeptDepth + 1, 9_999} {
		a := r.Arguments(nest(n))
		if a.Value != nil {
			t.Errorf("arguments %d deep were kept; want only their hash", n)
		}
		if a.SHA256 != (Redactor{}).Arguments(nest(n)).SHA256 {
			t.Errorf("arguments %d deep: hash %q, want the one kept without keep_arguments", n, a.SHA256)
		}
	}
	// Brackets in strings are not nesting.
	if a := r.Arguments([]byte(`{"a":"` + strings.Repeat(`[{`, 2*MaxKeptDepth) + `\""}`)); a.Value == nil {
		t.Error("arguments with brackets in a string were not kept")
	}
}

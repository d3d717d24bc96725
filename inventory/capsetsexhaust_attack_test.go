package inventory

import (
	"fmt"
	"testing"
)

// TestAttackCapabilitySetsExhausted: a client chooses what it declares,
// and each odd declaration (an extension name of its making, a member
// combination no client uses) was a capability set pinned, though its
// list added nothing to the pin. An agent declaring 16 of them before a
// client declaring elicitation first listed spent the upstream's sets:
// the elicitation tools were then drift, denied to every legitimate
// client until an operator approved them. Sets that list nothing new do
// not count toward the bound of sets pinned on first sight (they are
// bounded apart, for memory: maxCapabilitySetKeys).
func TestAttackCapabilitySetsExhausted(t *testing.T) {
	inv, _ := newInv(t, t.TempDir(), Options{})
	listAs(inv, "ev", noCaps, "echo", "Echo.")
	for i := range 3 * maxCapabilitySetKeys {
		listAs(inv, "ev", fmt.Sprintf(`{"extensions":{"x.example/junk%d":{}}}`, i), "echo", "Echo.")
	}
	if n := len(inv.Snapshot("ev", Pinned).Sets); n > maxCapabilitySetKeys {
		t.Errorf("%d capability sets pinned, want at most %d", n, maxCapabilitySetKeys)
	}
	listAs(inv, "ev", allCaps, "echo", "Echo.", "elicit", "Ask.")
	wantBlocked(t, inv, "ev", "elicit", false, "")
	listAs(inv, "ev", `{"roots":{}}`, "echo", "Echo.", "root", "Roots.")
	wantBlocked(t, inv, "ev", "root", false, "")
}

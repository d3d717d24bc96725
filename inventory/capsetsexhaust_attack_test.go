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

// TestAttackCapabilitySetExtensionsPastBound: a client declaring more
// extensions than are told apart (or one of a name too long) was taken
// for declaring none, though its server lists it the tools of the
// extensions it does declare. An MCP Apps host declaring its UI and eight
// more had the UI tools listed under the set of no extensions, pinned
// already: drift, and so left out of the set of a UI host declaring it
// alone, first seen later (a tool that is drift already is not pinned
// on first sight), denied for everyone. Past the bounds a client's
// extensions are a set of their own, "extensions".
func TestAttackCapabilitySetExtensionsPastBound(t *testing.T) {
	inv, _ := newInv(t, t.TempDir(), Options{})
	listAs(inv, "apps", noCaps, "echo", "Echo.")
	many := `{"extensions":{"io.modelcontextprotocol/ui":{},"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{}}}`
	listAs(inv, "apps", many, "echo", "Echo.", "show_chart", "Show a chart.")
	wantBlocked(t, inv, "apps", "show_chart", false, "")
	listAs(inv, "apps", `{"extensions":{"io.modelcontextprotocol/ui":{}}}`, "echo", "Echo.", "show_chart", "Show a chart.")
	wantBlocked(t, inv, "apps", "show_chart", false, "")
}

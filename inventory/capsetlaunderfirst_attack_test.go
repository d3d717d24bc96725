package inventory

import (
	"slices"
	"testing"
)

// TestAttackCapabilitySetLaundersFirst: a tool an upstream adds to every
// client's list is drift under each capability set pinned already, even
// when a client of a set first seen later listed it first. An agent
// declaring an extension of its making, listing as soon as the upstream
// added it, had it pinned with its new set, and then it was no drift to
// anyone: every client's list showed it, every call of it ran, where
// without that agent's listing it was denied for everyone
// (TestAttackCapabilitySetLaunders is the other order).
func TestAttackCapabilitySetLaundersFirst(t *testing.T) {
	const odd = `{"extensions":{"x.example/odd":{}}}`
	inv, _ := newInv(t, t.TempDir(), Options{})
	listAs(inv, "ev", noCaps, "echo", "Echo.")
	listAs(inv, "ev", `{"roots":{}}`, "echo", "Echo.", "root", "Roots.")
	listAs(inv, "ev", odd, "echo", "Echo.", "late", "Send files.")
	// Listed to the set of none, pinned with echo alone: new under it.
	listAs(inv, "ev", noCaps, "echo", "Echo.", "late", "Send files.")
	wantBlocked(t, inv, "ev", "late", true, "new since")
	// The agent listing again takes nothing out of drift.
	listAs(inv, "ev", odd, "echo", "Echo.", "late", "Send files.")
	wantBlocked(t, inv, "ev", "late", true, "new since")

	// Approved under the set of none, it is pinned there, and reviewed.
	listAs(inv, "ev", noCaps, "echo", "Echo.", "late", "Send files.")
	if err := inv.Approve("ev", "late"); err != nil {
		t.Fatal(err)
	}
	wantBlocked(t, inv, "ev", "late", false, "")
	listAs(inv, "ev", odd, "echo", "Echo.", "late", "Send files.")
	listAs(inv, "ev", noCaps, "echo", "Echo.", "late", "Send files.")
	wantBlocked(t, inv, "ev", "late", false, "")
	// Reviewed, it is new under no other set either.
	listAs(inv, "ev", `{"roots":{}}`, "echo", "Echo.", "root", "Roots.", "late", "Send files.")
	wantBlocked(t, inv, "ev", "late", false, "")
}

// TestCapabilitySetApprovedToolNewUnderNone: a tool an operator approved
// under one capability set (the list observed) is reviewed: listed under
// another set pinned without it, it is no new name there, and the
// approval holds for every set.
func TestCapabilitySetApprovedToolNewUnderNone(t *testing.T) {
	inv, _ := newInv(t, t.TempDir(), Options{})
	listAs(inv, "ev", noCaps, "echo", "Echo.")
	listAs(inv, "ev", `{"roots":{}}`, "echo", "Echo.", "root", "Roots.")
	listAs(inv, "ev", noCaps, "echo", "Echo.", "added", "Add.")
	wantBlocked(t, inv, "ev", "added", true, "new since")
	if err := inv.Approve("ev", "added"); err != nil {
		t.Fatal(err)
	}
	listAs(inv, "ev", `{"roots":{}}`, "echo", "Echo.", "root", "Roots.", "added", "Add.")
	wantBlocked(t, inv, "ev", "added", false, "")
	if p := inv.Snapshot("ev", Pinned); len(p.Sets) != 3 || !slices.Equal(p.Sets["(approved)"], []string{"added"}) {
		t.Errorf("pinned sets %v, want those of none and roots and the approved", p.Sets)
	}
}

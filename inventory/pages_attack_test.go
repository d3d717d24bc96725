package inventory

import "testing"

// TestAttackLaterPageAlone: an upstream pinned from a listing of three
// pages (a, b, c). The inventory joined pages in the order they came, not
// by the cursor each was asked for with: a client asking for the last
// page alone had it taken for the whole list, and a and b blocked as
// removed for every client. ObserveToolsPage is told the cursor: a page
// that continues no listing concludes nothing, nor does one whose cursor
// is not the one the listing's last page gave; a tool changed on it is
// still drift.
func TestAttackLaterPageAlone(t *testing.T) {
	listed := func(t *testing.T) *Inventory {
		inv, _ := newInv(t, t.TempDir(), Options{})
		inv.ObserveToolsPage("demo", tl("p2", "a", "A"), "")
		inv.ObserveToolsPage("demo", tl("p3", "b", "B"), "p2")
		inv.ObserveToolsPage("demo", tl("", "c", "C"), "p3")
		if pin := inv.Snapshot("demo", Pinned); pin == nil || len(pin.Tools) != 3 {
			t.Fatalf("got pin %v, want the three tools pinned", pin)
		}
		return inv
	}
	for _, tc := range []struct {
		name  string
		pages func(inv *Inventory)
	}{
		{"last page alone", func(inv *Inventory) {
			inv.ObserveToolsPage("demo", tl("", "c", "C"), "p3")
		}},
		{"a page alone", func(inv *Inventory) {
			inv.ObserveToolsPage("demo", tl("p3", "b", "B"), "p2")
			inv.ObserveToolsPage("demo", tl("", "c", "C"), "p3")
		}},
		{"a page skipped", func(inv *Inventory) {
			inv.ObserveToolsPage("demo", tl("p2", "a", "A"), "")
			inv.ObserveToolsPage("demo", tl("", "c", "C"), "p3")
		}},
		{"a cursor of the client's making", func(inv *Inventory) {
			inv.ObserveToolsPage("demo", tl("", "c", "C"), "\x00odd cursor")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := listed(t)
			tc.pages(inv)
			for _, tool := range []string{"a", "b", "c"} {
				wantBlocked(t, inv, "demo", tool, false, "")
			}
		})
	}

	t.Run("drift on a page alone", func(t *testing.T) {
		inv := listed(t)
		inv.ObserveToolsPage("demo", tl("", "c", "C2"), "p3")
		wantBlocked(t, inv, "demo", "c", true, "changed since it was pinned")
		wantBlocked(t, inv, "demo", "a", false, "")
	})
	t.Run("a listing to the end still concludes", func(t *testing.T) {
		inv := listed(t)
		inv.ObserveToolsPage("demo", tl("", "c", "C"), "p3") // alone: nothing
		inv.ObserveToolsPage("demo", tl("p2", "a", "A"), "")
		inv.ObserveToolsPage("demo", tl("", "c", "C"), "p2") // b gone
		wantBlocked(t, inv, "demo", "b", true, "removed")
		wantBlocked(t, inv, "demo", "a", false, "")
	})
}

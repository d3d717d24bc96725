package inventory

import (
	"strings"
	"testing"
)

// TestAttackDriftEventBounded: an upstream changes a pinned tool's
// description to 1 MiB of its choosing, then to another, listing after
// listing (a list_changed makes clients list again). Each version was a
// sluice.inventory_drift event whose diff held the whole changed text, so
// every listing wrote its size again into the audit store. The event's
// diff holds a bounded part of each changed text; sluice inventory diff
// still shows it whole.
func TestAttackDriftEventBounded(t *testing.T) {
	inv, rec := newInv(t, t.TempDir(), Options{})
	inv.ObserveTools("evil", tl("", "echo", "Echoes."))
	rec.take(EventDrift)
	for i, c := range []string{"a", "b", "c"} {
		big := strings.Repeat(c+" ", 512<<10)
		inv.ObserveTools("evil", tl("", "echo", big))
		evs := rec.take(EventDrift)
		if len(evs) != 1 {
			t.Fatalf("version %d: %d drift events, want 1", i, len(evs))
		}
		diff, _ := evs[0].Detail["diff"].(string)
		if len(diff) > 3*maxEventDelta || !strings.Contains(diff, "more characters") {
			t.Errorf("version %d: the drift event's diff is %d bytes, want at most %d, saying what it left out", i, len(diff), 3*maxEventDelta)
		}
	}
	d, err := inv.Diff("evil")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.String(); len(s) < 1<<20 {
		t.Errorf("sluice inventory diff: %d bytes, want the changed text whole", len(s))
	}
}

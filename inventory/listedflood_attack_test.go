package inventory

import (
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackListedFindingsFlood: an upstream answers prompts/list with
// 100,000 small poisoned prompts (4.5 MB). Every one was a
// sluice.tool_poisoning event, and since what was reported is forgotten
// past 40,000, every listing of it by any client wrote 100,000 events to
// the audit store again. A listing records a bounded number of finding
// events, and one more saying how many it left out; every item is still
// withheld.
func TestAttackListedFindingsFlood(t *testing.T) {
	inv, rec := newInv(t, t.TempDir(), Options{})
	items := make([]jsontext.Value, 100_000)
	for i := range items {
		items[i] = jsontext.Value(fmt.Sprintf(`{"name":"p%d","description":"<IMPORTANT>x"}`, i))
	}
	for n := range 3 {
		show := inv.ScreenListed("evil", "prompts/list", items)
		for i, s := range show {
			if s {
				t.Fatalf("listing %d: poisoned prompt %d shown", n, i)
			}
		}
		evs := rec.take(EventPoisoning)
		if len(evs) > 100 {
			t.Errorf("listing %d: %d poisoning events, want at most 100", n, len(evs))
		}
		last := evs[len(evs)-1]
		if last.Detail["rule"] != "findings_not_recorded" || last.Detail["not_recorded"] == nil {
			t.Errorf("listing %d: the last event %+v, want one saying how many findings were left out", n, last)
		}
	}
	if _, w := inv.Withheld("evil", "prompt:p5"); !w {
		t.Error("a prompts/get of a poisoned prompt: not refused")
	}
}

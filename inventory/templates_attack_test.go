package inventory

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/costratio"
)

// poisonedTemplates lists n poisoned resource templates of upstream up,
// each "{a}" then a literal that a URI of 'a's almost matches.
func poisonedTemplates(inv *Inventory, up string, n int) {
	items := make([]jsontext.Value, n)
	for i := range items {
		items[i] = jsontext.Value(fmt.Sprintf(`{"uriTemplate":"{a}%sb%d{c}","name":"t%d","description":"<IMPORTANT>x</IMPORTANT>"}`,
			strings.Repeat("a", 40), i, i))
	}
	inv.ScreenListed(up, "resources/templates/list", items)
}

// TestAttackWithheldTemplatesFlood: an upstream lists 10,000 poisoned
// resource templates (withheld, each remembered to refuse reads of URIs it
// could expand to), and an agent reads a 1 MiB URI of it: every template
// was matched against the URI, each scanning all of it, 5 s of CPU per
// read, under the inventory's lock, which every upstream's tools/list and
// listing screen waits on. A read costs a bounded multiple of a read of a
// short URI, a URI past what can be checked is refused (fail closed), and
// the matching holds no lock.
func TestAttackWithheldTemplatesFlood(t *testing.T) {
	inv, _ := newInv(t, t.TempDir(), Options{})
	poisonedTemplates(inv, "evil", maxListed)
	long := "resource:" + strings.Repeat("a", 1<<20)
	var reason string
	var withheld bool
	ratio, took, base := costratio.Of(func() { reason, withheld = inv.Withheld("evil", long) },
		func() { inv.Withheld("evil", "resource:x") })
	t.Logf("1 MiB URI against %d templates: %v; a short one: %v; ratio %.0f", maxListed, took, base, ratio)
	// Around 50 here, up to 74 seen, and failed once at 100 in a loaded
	// run; the flood it guards against was 5 s against ~0.2 ms, 25,000.
	if ratio > 1000 {
		t.Errorf("a read of a 1 MiB URI took %v, %.0f times one of a short URI (%v)", took, ratio, base)
	}
	if !withheld || !strings.Contains(reason, "too long") {
		t.Errorf("a URI too long to check against the withheld templates: withheld %v (%q), want refused", withheld, reason)
	}

	// Matching is as before below the bound.
	if _, w := inv.Withheld("evil", "resource:zz"+strings.Repeat("a", 40)+"b17zz"); !w {
		t.Error("a URI a withheld template expands to: not refused")
	}
	if _, w := inv.Withheld("evil", "resource:zz"+strings.Repeat("a", 40)+"czz"); w {
		t.Error("a URI no withheld template expands to: refused")
	}
}

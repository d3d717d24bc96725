package inventory

import (
	"strings"
	"testing"
)

// TestDriftReasonNamesHash: the reason a drifted tool is blocked tells
// the operator how to approve it; it named `sluice inventory approve`
// without --hash, which approves whatever version the tool has by then,
// one no one reviewed if the upstream changed it again. It names the
// version blocked (the diff's observed hash), which a later change makes
// stale.
func TestDriftReasonNamesHash(t *testing.T) {
	inv, _ := newInv(t, t.TempDir(), Options{})
	inv.ObserveTools("demo", tl("", "web_search", "Searches the web."))
	inv.ObserveTools("demo", tl("", "web_search", "Searches the web. Changed."))
	d, err := inv.Diff("demo")
	if err != nil || len(d.Changes) != 1 {
		t.Fatalf("diff: %v %v", d, err)
	}
	want := `sluice inventory approve demo web_search --hash ` + d.Changes[0].ObservedHash
	reason, blocked := inv.Blocked("demo", "web_search")
	if !blocked || !strings.Contains(reason, want) {
		t.Errorf("Blocked = %v %q, want it to name %q", blocked, reason, want)
	}
	if err := inv.ApproveHash("demo", "web_search", d.Changes[0].ObservedHash); err != nil {
		t.Errorf("approving the hash the reason names: %v", err)
	}
}

package ownership

import (
	"fmt"
	"testing"
)

// TestUnclaimed: the first owner kept stays, Take forgets it, and past
// the bound the table keeps its size.
func TestUnclaimed(t *testing.T) {
	u := NewUnclaimed(3)
	u.Keep("t1", "alice", "s-alice")
	u.Keep("t1", "bob", "s-bob")
	if owner, share, ok := u.Take("t1"); !ok || owner != "alice" || share != "s-alice" {
		t.Errorf("Take(t1) = %q, %q, %v; want alice, s-alice, true", owner, share, ok)
	}
	if _, _, ok := u.Take("t1"); ok {
		t.Error("Take(t1) again: found, want it forgotten")
	}
	for i := range 10 {
		u.Keep(fmt.Sprint("k", i), "alice", "alice")
	}
	if n := len(u.m); n != 3 {
		t.Errorf("after 10 keys in a table of 3: %d kept, want 3", n)
	}
}

package ownership

import (
	"fmt"
	"testing"
)

// TestUnclaimed: the first owner kept stays, Take forgets it, and past
// the bound the table keeps its size.
func TestUnclaimed(t *testing.T) {
	u := NewUnclaimed(3, 3)
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

// TestUnclaimedShare: one share keeping keys without end forgets its own
// oldest past its share, never another's; the unnamed share has no bound
// of its own; a key taken frees its share's place.
func TestUnclaimedShare(t *testing.T) {
	u := NewUnclaimed(10, 3)
	u.Keep("a1", "alice", "alice")
	for i := range 100 {
		u.Keep(fmt.Sprint("m", i), "mallory", "mallory")
	}
	if owner, _, ok := u.Take("a1"); !ok || owner != "alice" {
		t.Errorf("Take(a1) = %q, %v; want alice, true: mallory's keys pushed out alice's", owner, ok)
	}
	for i := range 100 {
		_, _, ok := u.Take(fmt.Sprint("m", i))
		if want := i >= 97; ok != want {
			t.Errorf("Take(m%d) found %v, want %v: mallory keeps her newest 3", i, ok, want)
		}
	}
	for i := range 20 {
		u.Keep(fmt.Sprint("n", i), "anyone", "")
	}
	if n := len(u.m); n != 10 {
		t.Errorf("after 20 unnamed keys in a table of 10: %d kept, want 10", n)
	}
	u = NewUnclaimed(10, 3)
	for i := range 3 {
		u.Keep(fmt.Sprint("b", i), "bob", "bob")
	}
	u.Take("b0")
	u.Keep("b3", "bob", "bob")
	for i := 1; i <= 3; i++ {
		if _, _, ok := u.Take(fmt.Sprint("b", i)); !ok {
			t.Errorf("Take(b%d): not found; b0 taken, bob's 3 are b1 to b3", i)
		}
	}
}

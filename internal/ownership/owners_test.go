package ownership

import (
	"fmt"
	"testing"
)

// TestOwnerTable: the first owner of a task stays, another principal does
// not own it, and past the bound the oldest tasks are forgotten first.
func TestOwnerTable(t *testing.T) {
	tb := New(3)
	tb.ContainsOrAdd("a\x00t1", "alice")
	tb.ContainsOrAdd("a\x00t1", "bob") // the first owner stays
	if known, owns := tb.Owns("a\x00t1", "alice"); !known || !owns {
		t.Errorf("alice's task: known %v owns %v", known, owns)
	}
	if known, owns := tb.Owns("a\x00t1", "bob"); !known || owns {
		t.Errorf("bob on alice's task: known %v owns %v", known, owns)
	}
	if known, _ := tb.Owns("b\x00t1", "alice"); known {
		t.Error("the same task id on another agent is another task")
	}
	tb.ContainsOrAdd("a\x00t2", "")
	if known, owns := tb.Owns("a\x00t2", ""); !known || !owns {
		t.Error(`a task of no principal is owned by ""`)
	}
	for i := 3; i <= 5; i++ {
		tb.ContainsOrAdd(fmt.Sprintf("a\x00t%d", i), "carol")
	}
	for i, want := range []bool{false, false, true, true, true} { // t1, t2 forgotten
		if known, _ := tb.Owns(fmt.Sprintf("a\x00t%d", i+1), "carol"); known != want {
			t.Errorf("t%d known %v, want %v", i+1, known, want)
		}
	}
	if len(tb.m) != 3 {
		t.Errorf("%d entries, want 3", len(tb.m))
	}
}

// TestOwnerShare: with a share, an owner past it forgets its own oldest
// keys, never another's; the table still forgets its oldest, whoever's,
// once many owners fill it; and what an owner holds stays within the
// share through both.
func TestOwnerShare(t *testing.T) {
	tb := NewShared(10, 3)
	tb.ContainsOrAdd("alice-1", "alice")
	for i := range 100 {
		tb.ContainsOrAdd(fmt.Sprintf("mallory-%d", i), "mallory")
	}
	if known, owns := tb.Owns("alice-1", "alice"); !known || !owns {
		t.Errorf("alice's key after mallory added 100: known %v owns %v", known, owns)
	}
	for i, want := range map[int]bool{0: false, 96: false, 97: true, 98: true, 99: true} {
		if known, _ := tb.Owns(fmt.Sprintf("mallory-%d", i), "mallory"); known != want {
			t.Errorf("mallory-%d known %v, want %v", i, known, want)
		}
	}
	// Many owners fill the table: its oldest goes, alice's among them.
	for o := range 4 {
		for i := range 3 {
			tb.ContainsOrAdd(fmt.Sprintf("o%d-%d", o, i), fmt.Sprintf("owner%d", o))
		}
	}
	if known, _ := tb.Owns("alice-1", "alice"); known {
		t.Error("alice's key, the oldest, is still known in a full table")
	}
	if len(tb.m) > 10 {
		t.Errorf("%d keys known, want at most 10", len(tb.m))
	}
	for v, o := range tb.byOwner {
		n := 0
		for _, k := range o.keys[o.head:] {
			if e, ok := tb.m[k]; ok && e.owner == v {
				n++
			}
		}
		if n != o.live || n > 3 {
			t.Errorf("an owner holds %d keys, counted %d (share 3)", n, o.live)
		}
	}
	for i := range 8 { // the unnamed owner has no share
		tb.ContainsOrAdd(fmt.Sprintf("anon-%d", i), "")
	}
	if known, _ := tb.Owns("anon-0", ""); !known {
		t.Error("the unnamed owner's first of 8 keys is forgotten: it has no share")
	}
	for i := range 1000 { // its list of keys stays bounded
		tb.ContainsOrAdd(fmt.Sprintf("late-%d", i), fmt.Sprintf("late%d", i%20))
	}
	total := 0
	for _, o := range tb.byOwner {
		total += len(o.keys) - o.head
	}
	if total > 20*(64+6) {
		t.Errorf("owners' key lists hold %d entries for a table of 10", total)
	}
}

// TestContainsOrAddIn: keys of several owners counted against one share
// push out that share's oldest, never another's, and keep their owners.
func TestContainsOrAddIn(t *testing.T) {
	tb := NewShared(10, 3)
	tb.ContainsOrAdd("alice-1", "alice")
	for n := range 12 {
		tb.ContainsOrAddIn(fmt.Sprintf("m-%d", n), fmt.Sprintf("mallory-%d", n), "addr")
	}
	if _, owns := tb.Owns("alice-1", "alice"); !owns {
		t.Error("alice's key was pushed out by owners sharing one share")
	}
	if _, owns := tb.Owns("m-11", "mallory-11"); !owns {
		t.Error("the newest key of the share: got it forgotten or not its owner's")
	}
	if known, _ := tb.Owns("m-8", "mallory-8"); known {
		t.Error("the share holds more than 3 keys")
	}
}

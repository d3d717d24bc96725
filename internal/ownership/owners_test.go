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

package inventory

import "testing"

// TestReviewInstructionsPinNotStale: pinning instructions on first sight
// saves the pin again. A replica that has not yet loaded the pin another
// replica saved (an operator's approval) must not save its older pin with
// the instructions: the approval would be undone on every replica, the
// approved tool blocked again.
func TestReviewInstructionsPinNotStale(t *testing.T) {
	dir := t.TempDir()
	a, _ := newInv(t, dir, Options{})
	a.ObserveTools("notes", tl("", "add_note", "Add a note."))
	b, _ := newInv(t, dir, Options{})
	a.ObserveTools("notes", tl("", "add_note", "Add a note, dated."))
	if !blocked(a, "notes", "add_note") {
		t.Fatal("the changed tool is not blocked")
	}
	if err := a.Approve("notes", "add_note"); err != nil {
		t.Fatal(err)
	}
	// B, before A's notice, sees the upstream's instructions first.
	if !b.ScreenInstructions("notes", "initialize", "Notes server.") {
		t.Fatal("first instructions withheld")
	}
	a.reload(Pinned, "notes") // B's notice of its save
	if blocked(a, "notes", "add_note") {
		t.Error("the approval through A was undone by B's pin of the instructions")
	}
	if p := a.Snapshot("notes", Pinned); p.Instructions["initialize"] != "Notes server." {
		t.Errorf("pinned instructions %q, want those B saw", p.Instructions)
	}
}

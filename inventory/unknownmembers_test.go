package inventory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestUnknownMembersOldPinAdopted: a pin made before unknown members were
// kept has none; an upgrade raises no drift for its tools, and pins the
// unknown members they are listed with, whose changes are drift from then
// on. A tool that changed otherwise is drift as ever.
func TestUnknownMembersOldPinAdopted(t *testing.T) {
	const first = `{"tools":[{"name":"add_note","description":"Add a note.","id":"n1"},{"name":"echo","description":"Echo."},{"name":"later","description":"Changes later."}]}`
	dir := t.TempDir()
	old, _ := newInv(t, dir, Options{})
	old.ObserveTools("notes", jsontext.Value(first))
	pin := old.Snapshot("notes", Pinned)
	tools := make([]Tool, len(pin.Tools))
	for i, tool := range pin.Tools {
		tool.Unknown = nil // as pinned before they were kept
		if err := tool.seal(); err != nil {
			t.Fatal(err)
		}
		tools[i] = tool
	}
	legacy, err := newSnapshot("notes", tools, clock())
	if err != nil {
		t.Fatal(err)
	}
	legacy.Sets = pin.Sets
	if legacy.Hash == pin.Hash {
		t.Fatal("the legacy pin has the hash of one with unknown members")
	}
	key, err := LoadKey(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(filepath.Join(dir, "inventory"), key)
	if err := st.Save(Pinned, legacy); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "inventory", "observed", "notes.json")); err != nil {
		t.Fatal(err)
	}

	inv, rec := newInv(t, dir, Options{})
	if p := inv.Snapshot("notes", Pinned); p == nil || p.Hash != legacy.Hash {
		t.Fatalf("pin loaded %+v, want the legacy one", p)
	}
	inv.ObserveTools("notes", jsontext.Value(strings.Replace(first, "Changes later.", "Changed.", 1)))
	if evs := rec.take(EventDrift); len(evs) != 1 || evs[0].Tool != "later" {
		t.Fatalf("drift events %+v, want one, of later", evs)
	}
	for _, name := range []string{"add_note", "echo"} {
		wantBlocked(t, inv, "notes", name, false, "")
	}
	wantBlocked(t, inv, "notes", "later", true, "")
	p := inv.Snapshot("notes", Pinned)
	if n, _ := p.Tool("add_note"); string(n.Unknown) != `{"id":"n1"}` {
		t.Errorf("pinned add_note unknown = %s, want {\"id\":\"n1\"}", n.Unknown)
	}
	if e, _ := p.Tool("echo"); string(e.Unknown) != `{}` {
		t.Errorf("pinned echo unknown = %s, want {}", e.Unknown)
	}
	if l, _ := p.Tool("later"); l.Unknown != nil || l.Description != "Changes later." {
		t.Errorf("pinned later = %+v, want it as pinned before", l)
	}
	// Kept: a gateway started again holds the adopted pin.
	inv2, rec2 := newInv(t, dir, Options{})
	inv2.ObserveTools("notes", jsontext.Value(`{"tools":[{"name":"add_note","description":"Add a note.","id":`+quote(unknownPayload)+`},{"name":"echo","description":"Echo.","x-notes":"Say hi."},{"name":"later","description":"Changed."}]}`))
	var drifted []string
	for _, e := range rec2.take(EventDrift) {
		drifted = append(drifted, e.Tool)
	}
	slices.Sort(drifted)
	if !slices.Equal(drifted, []string{"add_note", "echo"}) {
		t.Errorf("drift of %v, want add_note and echo", drifted)
	}
	wantBlocked(t, inv2, "notes", "add_note", true, "")
	wantBlocked(t, inv2, "notes", "echo", true, "")
	wantBlocked(t, inv2, "notes", "later", true, "")
}

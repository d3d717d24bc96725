package telemetry

import (
	"strings"
	"testing"
)

// SessionRef is stable, of a fixed form, its own reference, and not the
// id; "" stays "".
func TestSessionRef(t *testing.T) {
	id := "s2.tpa7ob.7yRQ7SxIcdRMFdPOHix5PPlQWTaW"
	ref := SessionRef(id)
	if ref != SessionRef(id) || !IsSessionRef(ref) || SessionRef(ref) != ref || strings.Contains(ref, id) || len(ref) != len(SessionRefPrefix)+24 {
		t.Errorf("SessionRef(%q) = %q", id, ref)
	}
	if ref == SessionRef(id+"x") {
		t.Error("two ids, one reference")
	}
	if SessionRef("") != "" || IsSessionRef(id) || IsSessionRef(SessionRefPrefix+strings.Repeat("G", 24)) {
		t.Error("SessionRef of \"\", or IsSessionRef of a non-reference")
	}
}

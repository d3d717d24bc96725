package main

import (
	"net/http"
	"testing"
)

// TestApproveNullHashRefused: a body that names the version to approve as
// null ({"tool":"web_search","hash":null}, as a script writes a hash it
// did not find in the diff: Python's None, JavaScript's null) was read as
// no hash, and the tool approved at whatever version it is now, unseen:
// what the duplicate-name case closed by 614d1cc did, with the name once.
// It is refused 400; a body without "hash" still approves the current
// version, and a hash given as a string is checked.
func TestApproveNullHashRefused(t *testing.T) {
	inv, post := driftedWebSearch(t)
	for _, tc := range []struct{ path, body string }{
		{"/admin/inventory/demo/approve", `{"tool":"web_search","hash":null}`},
		{"/admin/inventory/demo/pin", `{"hash":null}`},
		{"/admin/inventory/demo/approve", `{"tool":"web_search","hash":5}`},
	} {
		if rec := post(tc.path, tc.body); rec.Code != http.StatusBadRequest {
			t.Errorf("POST %s %s: %d %s, want 400", tc.path, tc.body, rec.Code, rec.Body)
		}
		if d, err := inv.Diff("demo"); err != nil || d.Empty() {
			t.Fatalf("after POST %s %s: diff %v %v, want web_search still drifted", tc.path, tc.body, d, err)
		}
	}
	if rec := post("/admin/inventory/demo/approve", `{"tool":"web_search","hash":"0000"}`); rec.Code != http.StatusConflict {
		t.Errorf("approve with another version's hash: %d %s, want 409", rec.Code, rec.Body)
	}
	if rec := post("/admin/inventory/demo/approve", `{"tool":"web_search"}`); rec.Code != http.StatusOK {
		t.Errorf("approve without a hash: %d %s, want 200", rec.Code, rec.Body)
	}
	if d, err := inv.Diff("demo"); err != nil || !d.Empty() {
		t.Errorf("after approving without a hash: diff %v %v, want none", d, err)
	}
}

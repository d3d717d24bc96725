package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/inventory"
)

// TestApproveMisnamedHashRefused: the admin API's approve and pin take
// the version to approve as "hash"; a body naming it otherwise (the
// diff's own "observed_hash", a typo) had the name ignored and the tool
// approved at whatever version it is now, the stale check skipped. Such a
// body is refused 400, nothing approved.
func TestApproveMisnamedHashRefused(t *testing.T) {
	inv, post := driftedWebSearch(t)
	for _, tc := range []struct{ path, body string }{
		{"/admin/inventory/demo/approve", `{"tool":"web_search","observed_hash":"0000"}`},
		{"/admin/inventory/demo/approve", `{"tool":"web_search","hsah":"0000"}`},
		{"/admin/inventory/demo/pin", `{"observed_hash":"0000"}`},
		// The hash in a second value, or named twice with the last null:
		// read as no hash, they approved the version unseen (review97).
		{"/admin/inventory/demo/approve", `{"tool":"web_search"}{"hash":"0000"}`},
		{"/admin/inventory/demo/approve", `{"tool":"web_search","hash":"0000","hash":null}`},
		{"/admin/inventory/demo/pin", `{"hash":"0000","hash":null}`},
		{"/admin/inventory/demo/approve", `{"Tool":"web_search","Hash":"0000"}`},
	} {
		if rec := post(tc.path, tc.body); rec.Code != http.StatusBadRequest {
			t.Errorf("POST %s %s: %d %s, want 400", tc.path, tc.body, rec.Code, rec.Body)
		}
		if d, err := inv.Diff("demo"); err != nil || d.Empty() {
			t.Fatalf("after POST %s %s: diff %v %v, want web_search still drifted", tc.path, tc.body, d, err)
		}
	}
}

// driftedWebSearch is an inventory whose upstream demo's web_search
// drifted from its pin, and a POST to its admin API.
func driftedWebSearch(t *testing.T) (*inventory.Inventory, func(path, body string) *httptest.ResponseRecorder) {
	t.Helper()
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	list := func(desc string) jsontext.Value {
		return jsontext.Value(`{"tools":[{"name":"web_search","description":"` + desc + `","inputSchema":{"type":"object"}}]}`)
	}
	inv.ObserveTools("demo", list("Searches the web."))
	inv.ObserveTools("demo", list("Searches the web. Revision 2, not reviewed."))
	h := inventoryAdmin(inv)
	return inv, func(path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		return rec
	}
}

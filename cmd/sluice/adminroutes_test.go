package main

import (
	"net/http"
	"testing"
)

// adminRoutes is every route of the admin API, by method and path (ids
// filled in with placeholders). TestAdminRoutesGuarded fails when a route
// is added to the admin mux without being listed here.
var adminRoutes = []struct{ method, path string }{
	{"GET", "/admin/approvals"},
	{"GET", "/admin/approvals/apr_0"},
	{"POST", "/admin/approvals/apr_0"},
	{"GET", "/admin/inventory"},
	{"GET", "/admin/inventory/demo/diff"},
	{"POST", "/admin/inventory/demo/pin"},
	{"POST", "/admin/inventory/demo/approve"},
	{"GET", "/admin/recommendations"},
	{"POST", "/admin/recommendations"},
	{"GET", "/admin/recommendations/rec_0"},
	{"POST", "/admin/recommendations/rec_0/approve"},
	{"POST", "/admin/recommendations/rec_0/decline"},
	{"GET", "/metrics"},
}

// TestAdminRoutesGuarded: every admin route refuses a request without the
// token (401), and every one that changes state refuses a body a
// cross-origin page could send without a preflight (415), even with the
// token — the admin API's CSRF defence; a foreign Origin is refused (403).
func TestAdminRoutesGuarded(t *testing.T) {
	g := startServe(t, holdAdd+"admin_token: t0k\n")
	base := "http://" + g.admin
	auth := map[string]string{"Authorization": "Bearer t0k"}
	for _, r := range adminRoutes {
		if got := adminDo(t, r.method, base+r.path, "application/json", "{}", nil); got != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", r.method, r.path, got)
		}
		if got := adminDo(t, r.method, base+r.path, "application/json", "{}", map[string]string{"Authorization": "Bearer t0k", "Origin": "https://evil.example"}); got != http.StatusForbidden {
			t.Errorf("%s %s from a foreign origin: %d, want 403", r.method, r.path, got)
		}
		if r.method != "POST" {
			continue
		}
		for _, ctype := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
			if got := adminDo(t, r.method, base+r.path, ctype, `{"action":"approve","by":"x","tool":"*"}`, auth); got != http.StatusUnsupportedMediaType {
				t.Errorf("%s %s as %q with the token: %d, want 415", r.method, r.path, ctype, got)
			}
		}
	}
	// With the token the guard lets every listed GET through.
	for _, r := range adminRoutes {
		if r.method != "GET" {
			continue
		}
		if got := adminDo(t, "GET", base+r.path, "", "", auth); got == http.StatusUnauthorized || got == http.StatusForbidden || got >= 500 {
			t.Errorf("GET %s with the token: %d", r.path, got)
		}
	}
}

package main

import (
	"net/http"
	"net/url"
	"testing"
)

// TestAdminAPIGuessingThrottled: the console refuses an address
// after five wrong tokens a minute, "which keeps a weak admin token from
// being guessed at speed". The admin API's bearer check, on the same
// listener and the same token, must not be an unthrottled side door.
func TestAdminAPIGuessingThrottled(t *testing.T) {
	g := startServe(t, holdAdd+"admin_token: t0k\n")
	base := "http://" + g.admin
	// The console throttles this address...
	anon := &http.Client{CheckRedirect: noRedirect}
	consoleThrottled := false
	for range 8 {
		resp, err := anon.PostForm(base+"/console/login", url.Values{"name": {"mallory"}, "token": {"guess"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		consoleThrottled = consoleThrottled || resp.StatusCode == http.StatusTooManyRequests
	}
	if !consoleThrottled {
		t.Fatal("console sign-in never throttled")
	}
	// ...but the admin API lets it go on guessing.
	unthrottled := 0
	for i := range 200 {
		code := adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer guess" + string(rune('a'+i%26))})
		if code == http.StatusUnauthorized {
			unthrottled++
		}
	}
	code := adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer t0k"})
	if unthrottled > 10 && code == http.StatusOK {
		t.Fatalf("admin API: %d wrong bearer tokens answered 401 (never 429) from an address the console throttles, and the right token still opened it (%d): the token can be guessed at full speed", unthrottled, code)
	}
}

package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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

// TestAdminAPIStrongTokenNotLockedOut: with a generated token (nobody
// guesses it), wrong tokens sent from the operator's address (an agent on
// loopback) are throttled, but the right one still opens the admin API:
// the agent cannot keep `sluice approvals` away from its held calls. A
// chosen token, however long, keeps the lockout (TestAdminAPIGuessingThrottled).
func TestAdminAPIStrongTokenNotLockedOut(t *testing.T) {
	g := startServe(t, holdAdd)
	b, err := os.ReadFile(filepath.Join(g.dir, adminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	base := "http://" + g.admin
	last := 0
	for i := range 10 {
		last = adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer guess" + string(rune('a'+i))})
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("the tenth wrong token: %d, want 429", last)
	}
	if code := adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer " + token}); code != http.StatusOK {
		t.Errorf("the generated token after ten wrong ones from its address: %d, want 200", code)
	}
	// A chosen token of any length keeps the lockout.
	chosen := "sluice-admin-token-for-my-laptop-0123456789"
	g2 := startServe(t, holdAdd+"admin_token: "+chosen+"\n")
	for i := range 10 {
		adminDo(t, "GET", "http://"+g2.admin+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer guess" + string(rune('a'+i))})
	}
	if code := adminDo(t, "GET", "http://"+g2.admin+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer " + chosen}); code != http.StatusTooManyRequests {
		t.Errorf("a chosen token after ten wrong ones: %d, want 429 (it may be guessable)", code)
	}
}

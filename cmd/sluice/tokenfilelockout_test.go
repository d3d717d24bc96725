package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// Review of 9bea71c: a token read from data_dir/admin.token is taken as
// generated (adminGuard.random = true) whatever it holds. An operator who
// put a chosen (short, guessable) token in that file (README: "Sign in
// with the admin token (admin_token, or data_dir/admin.token)") loses
// the lockout: a throttled address goes on having every guess checked.
// Before 9bea71c the length rule (StrongToken) kept the lockout for it.
func TestAdminTokenFileChosenKeepsLockout(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, adminTokenFile), []byte("t0k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startServe(t, holdAdd+"data_dir: "+dir+"\n")
	base := "http://" + g.admin
	for i := range 10 {
		adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer guess" + string(rune('a'+i))})
	}
	// The eleventh guess, from the throttled address, is the right one.
	if code := adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{"Authorization": "Bearer t0k"}); code != http.StatusTooManyRequests {
		t.Errorf("a chosen 3-character token from admin.token, guessed after ten wrong ones from a throttled address: %d, want 429 (guesses are still checked)", code)
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// `sluice approvals` (and `sluice inventory`) read ./sluice.yaml when no
// --config is given, and send the admin token to its admin_listen: the
// config's admin_token or, without one, the token the gateway generated
// in the data directory. A sluice.yaml another account left in the
// directory the operator runs the CLI in (/tmp, a shared checkout) names
// its own listener, and was sent the operator's token from the default
// data directory.
func TestAdminCLIConfigOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	var got atomic.Value
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]"))
	}))
	defer thief.Close()
	state := t.TempDir() // the operator's own data directory, by default
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("SLUICE_ADMIN_TOKEN", "")
	os.MkdirAll(filepath.Join(state, "sluice"), 0o700)
	os.WriteFile(filepath.Join(state, "sluice", adminTokenFile), []byte("operators-token\n"), 0o600)
	shared := t.TempDir()
	os.Chmod(shared, 0o1777)
	planted := filepath.Join(shared, "sluice.yaml")
	os.WriteFile(planted, []byte("admin_listen: "+thief.Listener.Addr().String()+"\n"), 0o644)
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	t.Chdir(shared)
	_ = runApprovals(context.Background(), []string{"list"}, io.Discard)
	if tok, _ := got.Load().(string); tok != "" {
		t.Errorf("the CLI sent %q to the admin_listen of a sluice.yaml owned by uid 65534", tok)
	}
	// Named with --config, it is the operator's choice.
	got.Store("")
	if err := runApprovals(context.Background(), []string{"list", "--config", planted}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if tok, _ := got.Load().(string); tok != "Bearer operators-token" {
		t.Errorf("--config %s: the admin API got %q", planted, tok)
	}
}

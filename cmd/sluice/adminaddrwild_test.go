package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// Review of 718207c: the gateway publishes admin.<pid>.addr for any
// admin_listen with port 0 (main.go: pickedPort), e.g. 0.0.0.0:0 or
// [::]:0, but the CLI now only follows a loopback address, so
// `sluice approvals --config` cannot find a running gateway that did
// publish its address ("no running gateway ... has published it").
func TestAdminAddrWildcardFound(t *testing.T) {
	if processStart(os.Getpid()) == "" {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	remove, err := publishAdminAddr(dir, "0.0.0.0:4444")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if _, err := findAdminAddr(dir); err != nil {
		t.Errorf("a gateway on admin_listen 0.0.0.0:0 published its address, but the CLI finds none: %v", err)
	}
}

// The same shared data_dir 718207c defends admin.<pid>.addr against: the
// admin token file is read whoever owns it, and through a symlink. Another
// account that can write data_dir plants admin.token before the gateway
// first starts and knows the admin token.
func TestAdminTokenFileOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, adminTokenFile)
	os.WriteFile(p, []byte("planted-by-uid-65534\n"), 0o644)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	tok, err := loadOrCreateToken(p, slog.New(slog.DiscardHandler))
	if err == nil && tok == "planted-by-uid-65534" {
		t.Errorf("the admin token is the one another account (uid 65534) planted in data_dir")
	}
}

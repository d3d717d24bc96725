package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// findAdminAddr's answer is where `sluice approvals --config` sends the
// admin bearer token. It must only ever name a loopback address (the
// file is only written for admin_listen 127.0.0.1:0), and only trust a
// file the CLI's own user wrote, not one through a symlink or owned by
// another account (a shared or group-writable data_dir).
func TestAdminAddrFileTrusted(t *testing.T) {
	self := os.Getpid()
	start := processStart(self)
	if start == "" {
		t.Skip("no /proc")
	}
	name := "admin." + strconv.Itoa(self) + ".addr"
	loopback := func(addr string) bool {
		host, _, err := net.SplitHostPort(addr)
		ip := net.ParseIP(host)
		return err == nil && ip != nil && ip.IsLoopback()
	}

	t.Run("non-loopback host", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, name), []byte("attacker.example:80\n"+start+"\n"), 0o600)
		if addr, err := findAdminAddr(dir); err == nil && !loopback(addr) {
			t.Errorf("the CLI would send the admin token to %s", addr)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "planted")
		os.WriteFile(target, []byte("127.0.0.1:4444\n"+start+"\n"), 0o600)
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if addr, err := findAdminAddr(dir); err == nil {
			t.Errorf("followed a symlink to %s", addr)
		}
	})
	t.Run("another user's file", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to chown")
		}
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("127.0.0.1:4444\n"+start+"\n"), 0o644)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if addr, err := findAdminAddr(dir); err == nil {
			t.Errorf("trusted a file owned by uid 65534: %s", addr)
		}
	})
	// Not defended: a file of this user's naming another live process
	// (pid 1) and a loopback port. Whoever can write this user's files in
	// data_dir can read its admin.token there anyway.
}

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAttackDataFilesReadableByOthers: data_dir is created 0700, but one
// that already exists (made by hand or by a package, /var/lib/sluice at
// 0755) is used as it is, and the gateway's databases were created with
// SQLite's 0644: every account on the host could read events.db (the
// decisions, and with audit.keep_arguments the redacted arguments of
// every call) and approvals.db (held calls' arguments as they will be
// sent, and the key that seals 2026-07-28 approval states).
func TestAttackDataFilesReadableByOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	g := startServe(t, "data_dir: "+dir+"\npolicy: {default: allow, result_mode: tool_result, require_approval: [add]}\naudit: {keep_arguments: true}\n")
	modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`)
	modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":1,"b":2}}`)
	check := func(when string) map[string]bool {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue // a -wal or -shm file gone meanwhile
			}
			seen[e.Name()] = true
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: %s: mode %v, want no access for group or others", when, e.Name(), info.Mode().Perm())
			}
		}
		return seen
	}
	running := check("running")
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	check("stopped")
	for _, name := range []string{"events.db", "events.db-wal", "approvals.db"} {
		if !running[name] {
			t.Errorf("no %s in data_dir while running: %v", name, running)
		}
	}
}

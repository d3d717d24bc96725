package privatefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.db")
	if err := Prepare(fresh); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.db")
	for _, p := range []string{old, old + "-wal", old + "-shm"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o664); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prepare(old); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fresh, old, old + "-wal", old + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), got)
		}
	}
	if b, _ := os.ReadFile(old); string(b) != "x" {
		t.Errorf("an existing database was changed: %q", b)
	}
}

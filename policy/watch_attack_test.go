package policy

// The tests in this file were written by an attacker review of the
// policy engine; each failed before its fix.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// A policy change that keeps the file's size and lands within the same
// modification-time tick (coarse file-system clocks, tools that restore
// mtimes) is never picked up by Run: poll looks only at mtime and size.
// The old, more permissive policy keeps serving and nothing says so.
func TestAttackWatcherMissesSameSizeSameMtime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const v1 = "default: deny\nallow: [wipe]\n"
	const v2 = "default: deny\ndeny:  [wipe]\n"
	if len(v1) != len(v2) {
		t.Fatal("sizes differ")
	}
	write(t, path, v1)
	w, err := NewWatcher(path, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	write(t, path, v2)
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil { // the same tick
		t.Fatal(err)
	}
	w.poll()
	w.poll() // new content is served once two polls read it (not mid-write)
	if d, _ := w.Decide(context.Background(), call("wipe")); d.Verdict == intercept.Allow {
		t.Errorf("after the file now denies wipe: %s/%s, policy err %v", d.Verdict, d.Reason, w.Err())
	}
}

// A writer that rewrites the file in place (truncate, then write) is seen
// half-way: a prefix that parses is served as the policy until the next
// poll.
func TestAttackWatcherServesHalfWrittenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const full = "default: allow\ndeny: [wipe]\n"
	write(t, path, full)
	w, err := NewWatcher(path, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An editor saving a new version: the first write is on disk when Run polls.
	write(t, path, full[:len("default: allow\n")])
	w.poll()
	if d, _ := w.Decide(context.Background(), call("wipe")); d.Verdict == intercept.Allow {
		t.Errorf("while the file is half written: wipe %s/%s (policy %s)", d.Verdict, d.Reason, shortVersion(w.Policy().Version()))
	}
}

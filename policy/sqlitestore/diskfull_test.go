package sqlitestore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fulldisk"
	"github.com/sluicehq/sluice/policy"
)

// TestDiskFull: with the data directory's filesystem full, Remember
// returns an error naming route memory (the policy then denies the call
// with policy_error) and never reports a memory stored that is not; once
// space returns, memories are written again.
func TestDiskFull(t *testing.T) {
	disk := fulldisk.New(t)
	s, err := Open(filepath.Join(disk.Dir, FileName), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // before the unmount
	ctx := context.Background()
	label := []string{"source:sensitive"}
	disk.Fill(t)
	// A write into space the files already hold (the WAL's) may succeed on
	// a full filesystem; then the memory is stored and must be seen.
	var failed error
	for i := 0; i < 2000 && failed == nil; i++ {
		k := policy.Key{Scope: policy.ScopeAgent, Agent: strings.Repeat("a", 200) + string(rune('A'+i%50)) + time.Now().String()}
		if failed = s.Remember(ctx, k, label, time.Now()); failed == nil {
			if seen, err := s.Seen(ctx, k, label, time.Now().Add(-time.Minute)); err != nil || !seen {
				t.Fatalf("memory %d reported written with the disk full: seen %v, %v", i, seen, err)
			}
		}
	}
	if failed == nil {
		t.Fatal("2000 memories written to a full filesystem")
	}
	t.Logf("Remember with the disk full: %v", failed)
	// The policy names the store (route memory: ...); the store names its file.
	if got := failed.Error(); strings.Contains(got, "route memory") || !strings.HasPrefix(got, filepath.Join(disk.Dir, FileName)+": ") {
		t.Errorf("Remember with the disk full: got %v, want an error starting with the file's name (and not naming route memory, which the policy adds)", failed)
	}
	disk.Free(t)
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "after"}
	if err := s.Remember(ctx, k, label, time.Now()); err != nil {
		t.Fatalf("Remember once space returned: %v", err)
	}
	if seen, err := s.Seen(ctx, k, label, time.Now().Add(-time.Minute)); err != nil || !seen {
		t.Errorf("Seen once space returned: got %v, %v, want true", seen, err)
	}
}

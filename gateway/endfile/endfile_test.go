package endfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFile: a session ended through one process is ended for another on
// the same file, until its record expires; a session never ended is
// not; the file holds no session id.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Now()
	a.now = func() time.Time { return now }
	b.now = a.now
	ctx := t.Context()
	if err := a.EndSession(ctx, "s2.sealed-id", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.EndSession(ctx, "s2.forever", 0); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"s2.sealed-id": true, "s2.forever": true, "s2.other": false} {
		if got, err := b.SessionEnded(ctx, id); got != want || err != nil {
			t.Errorf("%s through the other process: %v %v, want %v", id, got, err, want)
		}
	}
	now = now.Add(2 * time.Hour)
	if got, _ := b.SessionEnded(ctx, "s2.sealed-id"); got {
		t.Error("an end past its record's TTL (the id expired): still ended")
	}
	if got, _ := b.SessionEnded(ctx, "s2.forever"); !got {
		t.Error("an end recorded for good: forgotten")
	}
	if err := a.prune(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.db.QueryRow(`SELECT count(*) FROM ended`).Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after pruning: %d %v, want 1", n, err)
	}
	for _, f := range []string{path, path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "sealed-id") {
			t.Errorf("%s holds the session id", f)
		}
	}
}

// TestPruneReadsOnlyExpired (review): pruning deleted the expired rows
// by reading every row, every pruneEvery writes: a flood of DELETEs (an
// open and a DELETE in a loop, each row kept for session_max_age) made
// every hundredth DELETE read the whole file, millions of rows, holding
// its write lock. Now the rows are indexed by expiry, and pruning reads
// only those that expired.
func TestPruneReadsOnlyExpired(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.db.Query(`EXPLAIN QUERY PLAN `+pruneQuery, time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "INDEX") || strings.Contains(p, "SCAN") {
		t.Errorf("pruning's plan: %s, want a search of an index on the expiry, not a scan of every row", p)
	}
}

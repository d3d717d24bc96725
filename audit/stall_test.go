package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// TestLockedDatabaseReportedPromptly: another process holding the
// database's write lock (a sqlite3 shell in a transaction, a backup tool)
// makes each write wait out SQLite's 10 s busy timeout, four times over,
// before it fails; a disk that stalls makes it wait for ever. Err said
// nothing meanwhile, so with audit.on_failure: deny calls were forwarded
// all that time with their events only queued, and lost if the lock
// outlasted the retries. A write that has not finished in StallAfter now
// makes the store unavailable (Err, OnHealth) until one succeeds.
func TestLockedDatabaseReportedPromptly(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	h := newHealth()
	st, err := Open(path, h.options(Options{Linger: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	dsn, err := dsn(path, false, false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_, _ = lock.ExecContext(ctx, "ROLLBACK")
		}
	}()

	start := time.Now()
	if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: "b"}); err != nil {
		t.Fatal(err)
	}
	for st.Err() == nil && time.Since(start) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if st.Err() == nil {
		t.Fatalf("Err after %s of a locked database: nil, want the store unavailable", time.Since(start).Round(time.Millisecond))
	}
	t.Logf("unavailable after %s: %v", time.Since(start).Round(time.Millisecond), st.Err())

	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	if err := st.Flush(ctx); err != nil {
		t.Fatalf("Flush once the lock is gone: %v", err)
	}
	if err := st.Err(); err != nil {
		t.Errorf("Err once the write went through: %v, want nil", err)
	}
	if ch := h.waitChange(t, 2); ch[0] == nil || ch[1] != nil {
		t.Errorf("OnHealth: got %v, want an error, then nil", ch)
	}
	evs, err := st.Query(ctx, Filter{Agent: "b"})
	if err != nil || len(evs) != 1 {
		t.Errorf("the event appended while locked: got %d, %v; want it written", len(evs), err)
	}
}

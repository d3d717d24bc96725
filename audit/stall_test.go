package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

	unlock := lockDatabase(t, path)
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

	unlock()
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

// lockDatabase holds the write lock of the database at path, as another
// process in a transaction would, until the function it returns (or the
// test's end) lets it go.
func lockDatabase(t *testing.T, path string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	dsn, err := dsn(path, false, false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := other.Conn(ctx)
	if err != nil {
		other.Close()
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		lock.Close()
		other.Close()
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
			lock.Close()
			other.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// TestShutdownGivesUpOnLockedDatabase: Shutdown returns once its context
// ends, with the events it could not write given up and said so, when
// another process holds the database's write lock. Close waited for the
// writer to take every queued batch through SQLite's 10 s busy timeout
// (four attempts for the first), then for the WAL checkpoint's: sluice
// serve took 40 s and more past its shutdown_timeout to exit, and for
// ever on a disk that stalls.
func TestShutdownGivesUpOnLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	h := newHealth()
	st, err := Open(path, h.options(Options{Linger: -1}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	unlock := lockDatabase(t, path)
	// One event the writer is held on, then two queued behind it.
	if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: "b"}); err != nil {
		t.Fatal(err)
	}
	h.waitChange(t, 1) // the write stalls
	for i := range 2 {
		if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = st.Shutdown(sctx)
	took := time.Since(start)
	if took > 2*time.Second {
		t.Errorf("Shutdown with a 300ms deadline and the database locked: returned after %s, want about 300ms", took.Round(time.Millisecond))
	}
	if err == nil || !strings.Contains(err.Error(), "given up") {
		t.Errorf("Shutdown's error: got %v, want the queued events given up", err)
	}

	// The writer lets go of the database once the write under way ends.
	unlock()
	select {
	case <-st.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the writer still runs 15s after the lock was let go")
	}
	if _, lost := h.snapshot(); lost != 2 {
		t.Errorf("OnLost: got %d events, want the 2 queued given up", lost)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for agent, want := range map[string]int{"b": 1, "c0": 0} {
		if evs, err := ro.Query(ctx, Filter{Agent: agent}); err != nil || len(evs) != want {
			t.Errorf("events of %s: got %d, %v; want %d (the write under way ends as it would have)", agent, len(evs), err, want)
		}
	}
}

// TestAppendDoesNotWaitForStuckWriter: while another process holds the
// database locked, an Append waits for its commit (Sync) or for room in
// the queue only until the write is found stalled (StallAfter): before,
// a Sync append waited out the busy timeout four times (40 s) and an
// append to a full queue as long, a disk that stalls for ever. An event
// turned away from the full queue is told to OnLost.
func TestAppendDoesNotWaitForStuckWriter(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			h := newHealth()
			st, err := Open(path, h.options(Options{Linger: -1, Sync: sync, QueueSize: 2, StallAfter: 200 * time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := st.Append(ctx, telemetry.Event{Type: "t", Agent: "a"}); err != nil {
				t.Fatal(err)
			}
			unlock := lockDatabase(t, path)
			start := time.Now()
			var errs []error
			for i := range 20 {
				errs = append(errs, st.Append(ctx, telemetry.Event{Type: "t", Agent: fmt.Sprint("b", i)}))
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("20 appends with the database locked took %s, want about StallAfter (200ms)", took.Round(time.Millisecond))
			}
			if errors.Join(errs...) == nil {
				t.Errorf("appends with the database locked: got no error, want the store's")
			}
			if !sync {
				if _, lost := h.snapshot(); lost == 0 {
					t.Errorf("OnLost: got nothing, want the events turned away from the full queue")
				}
			}
			unlock()
			if err := st.Close(); err != nil && sync {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestPruneOnLockedDatabaseDoesNotHoldAppends: the writer deleting events
// past Retention (at open, and every PruneInterval) on a database another
// process holds locked waits out SQLite's busy timeout (10 s) in BEGIN
// IMMEDIATE, on a disk that stalls for ever; the stall watchdog covered
// only the writing of events, so Err said nothing meanwhile and a Sync
// append waited for its commit, an append to a full queue for room, as
// long: under audit.on_failure: deny calls were let through and held. A
// prune that stalls now makes the store unavailable after StallAfter,
// and once the lock goes what was left queued is written.
func TestPruneOnLockedDatabaseDoesNotHoldAppends(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			path := createdDB(t)
			unlock := lockDatabase(t, path)
			h := newHealth()
			// The writer prunes as it starts: held in BEGIN IMMEDIATE.
			st, err := Open(path, h.options(Options{Linger: -1, Sync: sync, QueueSize: 2, StallAfter: 200 * time.Millisecond,
				Retention: time.Hour}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			var errs []error
			for i := range 5 {
				errs = append(errs, st.Append(ctx, telemetry.Event{Type: "t", Agent: fmt.Sprint("b", i)}))
			}
			took := time.Since(start)
			if took > 2*time.Second {
				t.Errorf("5 appends while a prune waits on the locked database took %s, want about StallAfter (200ms)", took.Round(time.Millisecond))
			}
			if errors.Join(errs...) == nil {
				t.Errorf("appends while the writer is stuck: got no error, want the store's")
			}
			if st.Err() == nil {
				t.Errorf("Err while a prune waits on the locked database: nil, want the store unavailable")
			}

			unlock()
			if ch := h.waitChange(t, 2); ch[0] == nil || ch[1] != nil {
				t.Errorf("OnHealth: got %v, want an error, then nil once the queue is written", ch)
			}
			fctx, fcancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer fcancel()
			if err := st.Flush(fctx); err != nil {
				t.Fatalf("Flush once the lock is gone: %v", err)
			}
			if err := st.Err(); err != nil {
				t.Errorf("Err once the queue was written: %v, want nil", err)
			}
			if evs, err := st.Query(context.Background(), Filter{Agent: "b0"}); err != nil || len(evs) != 1 {
				t.Errorf("the first event, queued while the writer was stuck: got %d, %v; want it written once the lock went", len(evs), err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestPruneStallEndsWhenPruneCommits: a prune that stalled on a locked
// database and then went through (the lock let go) says the store can
// write again, with no event appended: its commit is one. Otherwise an
// idle gateway stayed unavailable until an event was written, and under
// audit.on_failure: deny its next call was refused for a stall that was
// over.
func TestPruneStallEndsWhenPruneCommits(t *testing.T) {
	path := createdDB(t)
	unlock := lockDatabase(t, path)
	h := newHealth()
	st, err := Open(path, h.options(Options{StallAfter: 100 * time.Millisecond, Retention: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h.waitChange(t, 1) // the prune at open stalls
	unlock()
	if ch := h.waitChange(t, 2); ch[0] == nil || ch[1] != nil {
		t.Errorf("OnHealth: got %v, want an error, then nil once the prune commits", ch)
	}
	if err := st.Err(); err != nil {
		t.Errorf("Err once the prune went through, nothing appended: %v, want nil", err)
	}
}

// TestCheckStallEndsWhenCheckDoes: the writer's check that events.db is
// still the file it opened (every CheckInterval while idle) stalling on a
// hung file system makes the store unavailable after StallAfter, so that
// no call waits behind it; once the check ends, with the file still
// there, the store is available again with no event written: otherwise an
// idle gateway stayed unavailable, and under audit.on_failure: deny its
// next call was refused, for a stall that was over.
func TestCheckStallEndsWhenCheckDoes(t *testing.T) {
	release := make(chan struct{})
	var stalls atomic.Int32
	h := newHealth()
	opts := h.options(Options{StallAfter: 100 * time.Millisecond, CheckInterval: 20 * time.Millisecond})
	opts.stat = func(path string) (os.FileInfo, error) {
		if stalls.Add(1) == 3 { // the second idle check: open and the first pass
			<-release
		}
		return os.Stat(path)
	}
	st, err := Open(filepath.Join(t.TempDir(), FileName), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ch := h.waitChange(t, 1); ch[0] == nil {
		t.Fatalf("OnHealth while the check stalls: got %v, want an error", ch)
	}
	close(release)
	if ch := h.waitChange(t, 2); ch[1] != nil {
		t.Errorf("OnHealth: got %v, want an error, then nil once the check ended", ch)
	}
	if err := st.Err(); err != nil {
		t.Errorf("Err once the check ended, nothing appended: %v, want nil", err)
	}
}

// createdDB returns the path of an event database made and closed, for
// a test to lock before the store under test opens it.
func createdDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	first, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fulldisk"
	"github.com/sluicehq/sluice/telemetry"
)

// health collects what a Store reports through OnHealth and OnLost.
type health struct {
	mu      sync.Mutex
	changes []error // OnHealth calls, in order
	lost    int
	lostErr error
	changed chan struct{}
}

func newHealth() *health { return &health{changed: make(chan struct{}, 1)} }

func (h *health) options(o Options) Options {
	o.OnHealth = func(err error) {
		h.mu.Lock()
		h.changes = append(h.changes, err)
		h.mu.Unlock()
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	o.OnLost = func(n int, err error) {
		h.mu.Lock()
		h.lost += n
		h.lostErr = err
		h.mu.Unlock()
	}
	return o
}

func (h *health) snapshot() (changes []error, lost int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.changes...), h.lost
}

// waitChange waits until OnHealth has been called n times.
func (h *health) waitChange(t *testing.T, n int) []error {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if ch, _ := h.snapshot(); len(ch) >= n {
			return ch
		}
		select {
		case <-h.changed:
		case <-deadline:
			ch, _ := h.snapshot()
			t.Fatalf("OnHealth calls after 10s: got %v, want %d", ch, n)
		}
	}
}

// TestDiskFullReported fills the filesystem under a running store: the
// first failed write is reported at once through OnHealth and Err, and the
// events given up on through OnLost (on main this was only said by Close);
// when space returns, the next write succeeds and the store says so.
func TestDiskFullReported(t *testing.T) {
	disk := fulldisk.New(t)
	h := newHealth()
	st, err := Open(filepath.Join(disk.Dir, FileName), h.options(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // before the unmount
	ctx := context.Background()
	ev := telemetry.Event{Type: "sluice.test", Attrs: map[string]any{"payload": string(make([]byte, 2000))}}
	appendFlush := func() error {
		if err := st.Append(ctx, ev); err != nil {
			return err
		}
		return st.Flush(ctx)
	}
	if err := appendFlush(); err != nil {
		t.Fatalf("before the disk is full: %v", err)
	}
	disk.Fill(t)
	var failed error
	for i := 0; i < 2000 && failed == nil; i++ {
		failed = appendFlush()
	}
	if failed == nil {
		t.Fatal("2000 events written to a full filesystem")
	}
	if err := st.Err(); err == nil {
		t.Errorf("Err() with the disk full: got nil, want the write error")
	}
	changes := h.waitChange(t, 1)
	if changes[0] == nil {
		t.Errorf("first OnHealth call: got nil, want the write error")
	}
	if _, lost := h.snapshot(); lost < 1 {
		t.Errorf("OnLost: got %d events, want at least 1", lost)
	}
	// Once failing, a write is not retried for seconds: calls waiting on
	// it (sync: commit) hear of the failure at once.
	start := time.Now()
	if err := appendFlush(); err == nil {
		t.Errorf("append to a full disk: got nil error")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("append to a full disk while already failing took %v, want no retries", d)
	}

	disk.Free(t)
	if err := appendFlush(); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	if err := st.Err(); err != nil {
		t.Errorf("Err() after space returned: got %v, want nil", err)
	}
	changes = h.waitChange(t, 2)
	if changes[1] != nil {
		t.Errorf("second OnHealth call: got %v, want nil (writes succeed again)", changes[1])
	}
	if err := st.Close(); err == nil {
		t.Errorf("Close: got nil, want the count of events lost while the disk was full")
	}
}

// TestVanishedDataDir removes the data directory under a running store.
// SQLite would go on writing into the deleted file and report success; the
// store notices on its next check, reports ErrVanished through OnHealth
// and Err, and writes nothing more (a restart creates a new database).
func TestVanishedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, FileName)
	h := newHealth()
	st, err := Open(path, h.options(Options{CheckInterval: 10 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := telemetry.Event{Type: "sluice.test"}
	if err := st.Append(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// Noticed without any write: the periodic check.
	changes := h.waitChange(t, 1)
	if !errors.Is(changes[0], ErrVanished) {
		t.Errorf("OnHealth after the data dir was removed: got %v, want ErrVanished", changes[0])
	}
	if err := st.Err(); !errors.Is(err, ErrVanished) {
		t.Errorf("Err(): got %v, want ErrVanished", err)
	}
	// A new directory (or file) at the path is not the database the store
	// opened: still vanished.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); !errors.Is(err, ErrVanished) {
		t.Errorf("Flush after the data dir was removed: got %v, want ErrVanished", err)
	}
	if _, lost := h.snapshot(); lost != 1 {
		t.Errorf("OnLost: got %d events, want 1", lost)
	}
	if err := st.Close(); err == nil {
		t.Errorf("Close: got nil, want the count of events lost")
	}
	// A restart starts a new database there.
	st2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if got, err := st2.Query(ctx, Filter{}); err != nil || len(got) != 0 {
		t.Errorf("new database after the restart: got %d events, %v; want 0", len(got), err)
	}
}

// TestVanishedBeforeWrite removes the database between two writes, faster
// than the periodic check: the write itself notices.
func TestVanishedBeforeWrite(t *testing.T) {
	h := newHealth()
	st, path := openTest(t, h.options(Options{CheckInterval: -1}))
	defer st.Close()
	ctx := context.Background()
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); !errors.Is(err, ErrVanished) {
		t.Errorf("Flush after events.db was removed: got %v, want ErrVanished", err)
	}
	if err := st.Err(); !errors.Is(err, ErrVanished) {
		t.Errorf("Err(): got %v, want ErrVanished", err)
	}
}

package policy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

const (
	goodV1 = routePolicy
	badV   = routePolicy + "  - id: broken\n    after: {match_any_clas: [x]}\n"
	goodV2 = routePolicy + "deny: [web_fetch]\n"
)

func write(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Hot reload good -> bad -> good: the bad file is rejected and logged, the
// old policy keeps serving, and route memory survives every swap.
func TestWatcherReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, goodV1)
	var logs bytes.Buffer
	var reloads []string
	w, err := NewWatcher(path, WatchOptions{
		Options:  Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		OnReload: func(p *Policy, err error) { reloads = append(reloads, errString(err)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1 := w.Policy().Version()

	// A sensitive read before any reload.
	src := call("read_document")
	dec := intercept.Decide(ctx, w, src)
	w.Forwarded(ctx, src, dec)

	write(t, path, badV)
	if err := w.Reload(); err == nil || !strings.Contains(err.Error(), `unknown key "match_any_clas"`) {
		t.Fatalf("bad file: got %v, want the unknown key error", err)
	}
	if w.Err() == nil || !strings.Contains(logs.String(), "reload rejected") {
		t.Errorf("got Err() %v and log %q, want the error kept and logged", w.Err(), logs.String())
	}
	if got := intercept.Decide(ctx, w, call("web_search")); got.PolicyVersion != v1 || got.Reason != ReasonRouteDeny {
		t.Errorf("while the bad file is there: got %s by %s, want %s by the old policy %s", got.Reason, got.PolicyVersion, ReasonRouteDeny, v1)
	}

	write(t, path, goodV2)
	if err := w.Reload(); err != nil {
		t.Fatalf("good file: %v", err)
	}
	if w.Err() != nil || w.Policy().Version() == v1 {
		t.Errorf("got Err() %v and version %s, want no error and a new version", w.Err(), w.Policy().Version())
	}
	if got := intercept.Decide(ctx, w, call("web_fetch")); got.Reason != ReasonRuleDeny {
		t.Errorf("new rule: got %s, want %s", got.Reason, ReasonRuleDeny)
	}
	// Route memory from before both reloads still counts.
	if got := intercept.Decide(ctx, w, call("web_search")); got.Reason != ReasonRouteDeny {
		t.Errorf("after reload: got %s, want %s (route memory lost)", got.Reason, ReasonRouteDeny)
	}
	if want := []string{"unknown key", ""}; len(reloads) != 2 || !strings.Contains(reloads[0], want[0]) || reloads[1] != "" {
		t.Errorf("got reloads %q, want an error then a success", reloads)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNewWatcherNeedsAGoodFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewWatcher(filepath.Join(dir, "missing.yaml"), WatchOptions{}); err == nil {
		t.Error("missing file: got no error, want one")
	}
	path := filepath.Join(dir, "bad.yaml")
	write(t, path, badV)
	if _, err := NewWatcher(path, WatchOptions{}); err == nil {
		t.Error("bad file: got no error, want one")
	}
}

// Run notices a changed file on its own, rejects a bad one once, and ends
// with its context.
func TestWatcherRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		write(t, path, goodV1)
		reloaded := make(chan error, 10)
		w, err := NewWatcher(path, WatchOptions{
			Options:  Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
			OnReload: func(_ *Policy, err error) { reloaded <- err },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		v1 := w.Policy().Version()

		write(t, path, badV)
		time.Sleep(1500 * time.Millisecond) // fake time: one poll
		synctest.Wait()
		if err := <-reloaded; err == nil {
			t.Error("bad file: got no error, want one")
		}
		time.Sleep(3 * time.Second) // unchanged bad file: not reported again
		synctest.Wait()
		if len(reloaded) != 0 || w.Policy().Version() != v1 {
			t.Errorf("got %d more reloads and version %s, want none and %s", len(reloaded), w.Policy().Version(), v1)
		}

		write(t, path, goodV2)
		time.Sleep(time.Second)
		synctest.Wait()
		if err := <-reloaded; err != nil || w.Policy().Version() == v1 {
			t.Errorf("good file: got %v and version %s, want a new version", err, w.Policy().Version())
		}
		v2 := w.Policy().Version()

		// A file that goes away is reported once; the policy keeps serving
		// and comes back with the file (even with the same content).
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if len(reloaded) != 1 || <-reloaded == nil || w.Policy().Version() != v2 {
			t.Errorf("removed file: want exactly one error and version %s kept", v2)
		}
		write(t, path, goodV1)
		time.Sleep(time.Second)
		synctest.Wait()
		if err := <-reloaded; err != nil || w.Policy().Version() != v1 {
			t.Errorf("restored file: got %v and version %s, want version %s", err, w.Policy().Version(), v1)
		}
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
}

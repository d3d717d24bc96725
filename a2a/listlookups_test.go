package a2a

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// countingStore is a shared TaskStore that owns every key for "alice"
// and counts the lookups.
type countingStore struct{ lookups atomic.Int64 }

func (s *countingStore) Claim(_ context.Context, _, owner string) (string, error) { return owner, nil }
func (s *countingStore) Owner(context.Context, string) (string, bool, error) {
	s.lookups.Add(1)
	return "alice", true, nil
}

// TestListTasksLookupsBounded: an agent answering ListTasks with a page
// of thousands of tasks this replica never saw cost one shared-store round
// trip each; as MCP's tasks/list, at most maxListLookups are asked, the
// rest held back as tasks whose owner is unknown.
func TestListTasksLookupsBounded(t *testing.T) {
	store := &countingStore{}
	o := newOwners(1000, store, slog.New(slog.DiscardHandler))
	var b strings.Builder
	b.WriteString(`{"tasks":[`)
	for i := range 5000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"t%d"}`, i)
	}
	b.WriteString(`]}`)
	out := o.filterList(context.Background(), "agent", "alice", jsontext.Value(b.String()))
	if n := store.lookups.Load(); n != maxListLookups {
		t.Errorf("%d shared-store lookups for one ListTasks answer, want %d", n, maxListLookups)
	}
	if got := strings.Count(string(out), `"id"`); got != maxListLookups {
		t.Errorf("%d tasks kept, want the %d whose owner was asked", got, maxListLookups)
	}
}

// stalledStore is a shared TaskStore that does not answer: each call
// waits out its timeout, as the Redis store's does.
type stalledStore struct {
	timeout time.Duration
	lookups atomic.Int64
}

func (s *stalledStore) Claim(ctx context.Context, _, _ string) (string, error) {
	_, _, err := s.Owner(ctx, "")
	return "", err
}

func (s *stalledStore) Owner(ctx context.Context, _ string) (string, bool, error) {
	s.lookups.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	<-ctx.Done()
	return "", false, ctx.Err()
}

// TestListTasksStalledStore: a ListTasks answer naming tasks this replica
// never saw, with the shared store not answering, asked it about each in
// turn, a timeout apiece: 256 at agent_tasks.timeout (500ms) held the
// answer over two minutes, a WARN line each. After the first lookup that
// fails, the rest are held back unasked.
func TestListTasksStalledStore(t *testing.T) {
	store := &stalledStore{timeout: 20 * time.Millisecond}
	o := newOwners(1000, store, slog.New(slog.DiscardHandler))
	var b strings.Builder
	b.WriteString(`{"tasks":[`)
	for i := range maxListLookups {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"t%d"}`, i)
	}
	b.WriteString(`]}`)
	start := time.Now()
	out := o.filterList(context.Background(), "agent", "alice", jsontext.Value(b.String()))
	took := time.Since(start)
	if n := store.lookups.Load(); n != 1 || took > time.Second {
		t.Errorf("%d unknown tasks, the store stalled: %d lookups in %s, want 1 (one timeout, 20ms)", maxListLookups, n, took.Round(time.Millisecond))
	}
	if got := strings.Count(string(out), `"id"`); got != 0 {
		t.Errorf("%d tasks kept, want none", got)
	}
}

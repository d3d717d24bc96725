package a2a

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

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

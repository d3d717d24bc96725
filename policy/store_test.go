package policy

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMemoryStoreBounds(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewMemoryStore(MemoryOptions{MaxKeys: 2, MaxLabelsPerKey: 2})
	k := func(a string) Key { return Key{Scope: ScopeAgent, Agent: a} }
	_ = s.Remember(ctx, k("a"), []string{"x"}, t0)
	_ = s.Remember(ctx, k("b"), []string{"x"}, t0)
	_ = s.Remember(ctx, k("a"), []string{"y"}, t0) // a is now the most recent
	_ = s.Remember(ctx, k("c"), []string{"x"}, t0) // evicts b
	if got := s.Evictions(); got != 1 {
		t.Errorf("got %d evictions, want 1", got)
	}
	if seen, err := s.Seen(ctx, k("b"), []string{"x"}, time.Time{}); seen || !errors.Is(err, ErrEvicted) {
		t.Errorf("b after eviction: got %v, %v; want ErrEvicted", seen, err)
	}
	if seen, _ := s.Seen(ctx, k("a"), []string{"x"}, time.Time{}); !seen {
		t.Error("a: got not seen, want seen")
	}
	// A third label drops a's memory whole: no label is evicted alone.
	_ = s.Remember(ctx, k("a"), []string{"z"}, t0.Add(time.Second))
	if got := s.Evictions(); got != 2 {
		t.Errorf("got %d evictions, want 2", got)
	}
	if s.Len() != 2 {
		t.Errorf("got %d keys, want 2", s.Len())
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		k    Key
		want string
	}{
		{Key{Scope: ScopeAgent, Agent: "alice"}, "agent:alice"},
		{Key{Scope: ScopeSession, Agent: "alice", Session: "s-1"}, "session:5:alice/s-1"},
		// Without the length prefix these two would both be "a/b/c".
		{Key{Scope: ScopeSession, Agent: "a/b", Session: "c"}, "session:3:a/b/c"},
		{Key{Scope: ScopeSession, Agent: "a", Session: "b/c"}, "session:1:a/b/c"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

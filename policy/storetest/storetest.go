// Package storetest checks that a policy.Store behaves as the policy
// expects of route memory, for every implementation.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// Run checks s, which must be empty: labels remembered under a key are
// seen under that key only, from their time on; an older write does not
// move a label back in time; agents and sessions are kept apart.
func Run(t *testing.T, s policy.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	alice := policy.Key{Scope: policy.ScopeSession, Agent: "alice", Session: "s1"}
	if err := s.Remember(ctx, alice, []string{"source:sensitive", "@tool:read"}, t0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		k      policy.Key
		labels []string
		since  time.Time
		want   bool
	}{
		{"same key, label, since before", alice, []string{"x", "source:sensitive"}, t0.Add(-time.Hour), true},
		{"since equal", alice, []string{"source:sensitive"}, t0, true},
		{"since after", alice, []string{"source:sensitive"}, t0.Add(time.Nanosecond), false},
		{"other label", alice, []string{"sink:network"}, time.Time{}, false},
		{"no labels", alice, nil, time.Time{}, false},
		{"same session id, other agent", policy.Key{Scope: policy.ScopeSession, Agent: "bob", Session: "s1"}, []string{"source:sensitive"}, time.Time{}, false},
		{"agent scope is another key", policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}, []string{"source:sensitive"}, time.Time{}, false},
		{"agent and session ids do not run together", policy.Key{Scope: policy.ScopeSession, Agent: "alice/s", Session: "1"}, []string{"source:sensitive"}, time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := s.Seen(ctx, tt.k, tt.labels, tt.since)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v, want %v", tt.name, got, err, tt.want)
		}
	}
	// An older write does not move a label back in time; a newer one
	// moves it forward.
	if err := s.Remember(ctx, alice, []string{"source:sensitive"}, t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Seen(ctx, alice, []string{"source:sensitive"}, t0); !got {
		t.Errorf("after an older write: got false, want true")
	}
	if err := s.Remember(ctx, alice, []string{"source:sensitive"}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Seen(ctx, alice, []string{"source:sensitive"}, t0.Add(time.Hour)); !got {
		t.Errorf("after a newer write: got false, want true")
	}
	// Times keep their nanoseconds.
	bob := policy.Key{Scope: policy.ScopeAgent, Agent: "bob"}
	at := t0.Add(123456789 * time.Nanosecond)
	if err := s.Remember(ctx, bob, []string{"a", "b"}, at); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Seen(ctx, bob, []string{"b"}, at); !got {
		t.Errorf("since the exact time written: got false, want true")
	}
	if got, _ := s.Seen(ctx, bob, []string{"b"}, at.Add(time.Nanosecond)); got {
		t.Errorf("since a nanosecond after the time written: got true, want false")
	}
}

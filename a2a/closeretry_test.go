package a2a

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedDeletes is a RelayStore whose Deletes all fail (the store does
// not take them); while gate is set, each first tells started and waits
// for gate to close.
type gatedDeletes struct {
	RelayStore
	mu      sync.Mutex
	gate    chan struct{}
	started chan struct{}
}

func (s *gatedDeletes) Delete(context.Context, string) error {
	s.mu.Lock()
	gate, started := s.gate, s.started
	s.mu.Unlock()
	if gate != nil {
		select {
		case started <- struct{}{}:
		default:
		}
		<-gate
	}
	return errFlaky
}

// TestPushRelayCloseDuringRetry (found by a review): Close while a retry
// of relay removals is under way (its Delete waiting on the store) found
// nothing to try, so it said nothing, and the retry, seeing Close, stopped
// silently: ended relays were left to push_relay.ttl, delivered to by
// other replicas, with no line saying so. Close waits for the retry under
// way, tries once more what is left, and says how many are left.
func TestPushRelayCloseDuringRetry(t *testing.T) {
	store := &gatedDeletes{RelayStore: &memRelayStore{m: map[string][]byte{}}}
	s, err := newSharedRelays(store, [][]byte{[]byte(strings.Repeat("k", 32))}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.retryEvery = 10 * time.Millisecond
	var mu sync.Mutex
	var logged []string
	s.log = func(msg string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf("%s %v", msg, args))
	}
	if s.forget(context.Background(), []string{"r1", "r2"}) == nil {
		t.Fatal("forget with the store not taking deletes: no error")
	}
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	store.mu.Lock()
	store.gate, store.started = gate, started
	store.mu.Unlock()
	select {
	case <-started: // a retry's Delete waits on the store
	case <-time.After(5 * time.Second):
		t.Fatal("no retry")
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.close()
	}()
	time.Sleep(50 * time.Millisecond) // Close under way meanwhile
	store.mu.Lock()
	store.gate = nil
	store.mu.Unlock()
	close(gate)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	time.Sleep(50 * time.Millisecond) // what the retry does after
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "left to push_relay.ttl") || !strings.Contains(logged[0], "[relays 2]") {
		t.Errorf("Close during a retry of 2 removals the store does not take logged %q, want one line saying 2 are left to the TTL", logged)
	}
	if retryingNow(s) {
		t.Error("still retrying after Close")
	}
}

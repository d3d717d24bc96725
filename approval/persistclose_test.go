package approval

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestPersistedStoreCloseWhileInUse: Close may come while an operation
// (a waiting call's poll, the sweeper) runs. The store holds one
// connection for good, taken at its first transaction and again after a
// failed one; Close read it unguarded while an operation set it, a data
// race (go test -race). Every operation after Close fails.
func TestPersistedStoreCloseWhileInUse(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := s.Current(); err != nil {
			t.Errorf("Current: %v", err)
		}
	}()
	// Not a synchronisation: nothing orders the operation's taking the
	// connection before Close's reading it, as in a real shutdown.
	time.Sleep(100 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if _, err := s.Current(); err == nil {
		t.Error("an operation after Close succeeded")
	}
}

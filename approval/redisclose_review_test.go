package approval

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRedisStoreCloseMidOperation: a replica shutting down closes its
// approvals store while an operation of its may be under way (a waiting
// call's poll, four a second for each, or the sweeper), between taking
// the lock every replica's operations share in Redis and committing.
// Close closed the Redis client at once: the commit failed, the held call
// was lost, and the lock stayed taken for its lease (10 s), in which every
// other replica's approvals store waited 5 s and failed (calls that need
// approval denied, decisions refused). Close now waits for the operation.
func TestRedisStoreCloseMidOperation(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Store {
		s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	leaving, other := open(), open()
	defer other.Close()

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer func(f func(*Request) ([]byte, error)) { marshalRequest = f }(marshalRequest)
	orig := marshalRequest
	marshalRequest = func(r *Request) ([]byte, error) {
		once.Do(func() { close(entered); <-release })
		return orig(r)
	}
	held := make(chan intercept.Decision, 1)
	go func() {
		held <- intercept.Decide(context.Background(), &Gate{Next: holdEvery, Store: leaving}, call(`{"amount":5}`))
	}()
	<-entered // the operation holds the lock
	closed := make(chan struct{})
	go func() {
		leaving.Close()
		close(closed)
	}()
	select {
	case <-closed: // Close did not wait
	case <-time.After(200 * time.Millisecond): // Close waits: let the operation end
	}
	close(release)
	d := <-held
	<-closed
	if d.Verdict != intercept.RequireApproval {
		t.Errorf("the call being held while the store closed: %s %s %q", d.Verdict, d.Reason, d.PublicReason)
	}
	n, err := other.Current()
	if err != nil {
		t.Fatalf("another replica's store after this one closed mid-operation: %v", err)
	}
	if len(n) != 1 || n[0].Status != Pending {
		t.Errorf("another replica sees %d requests (%v), want the one held", len(n), n)
	}
}

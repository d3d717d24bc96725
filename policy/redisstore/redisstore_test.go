package redisstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fulldisk"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/policy/storetest"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	s, err := New(t.Context(), Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.Run(t, s)
}

// TestSharedAndPrefixed checks that two stores on one server share memory
// under one prefix and not across prefixes, and that a memory expires
// TTL after its last write.
func TestSharedAndPrefixed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	open := func(prefix string, ttl time.Duration) *Store {
		s, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: prefix, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, other := open("", 0), open("", 0), open("tenant2:", 0)
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	now := time.Now()
	if err := a.Remember(ctx, k, []string{"source:sensitive"}, now); err != nil {
		t.Fatal(err)
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, now.Add(-time.Minute)); err != nil || !seen {
		t.Errorf("another replica: got %v, %v; want seen", seen, err)
	}
	if seen, err := other.Seen(ctx, k, []string{"source:sensitive"}, time.Time{}); err != nil || seen {
		t.Errorf("another prefix: got %v, %v; want not seen", seen, err)
	}
	short := open("short:", 200*time.Millisecond)
	if err := short.Remember(ctx, k, []string{"x"}, now); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		seen, err := short.Seen(ctx, k, []string{"x"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if !seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a memory with a 200ms TTL is still there after 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOutageIsAnError checks that with Redis gone, both methods return an
// error (which the policy turns into a deny) within the timeout, and that
// New refuses a server that does not answer.
func TestOutageIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	s, err := New(t.Context(), Options{URL: srv.URL(), Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv.Stop()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.Remember(ctx, k, []string{"x"}, time.Now()); err == nil {
		t.Error("Remember with Redis down: got nil error, want one")
	}
	if _, err := s.Seen(ctx, k, []string{"x"}, time.Time{}); err == nil {
		t.Error("Seen with Redis down: got nil error, want one")
	}
	if _, err := New(t.Context(), Options{URL: srv.URL(), Timeout: 200 * time.Millisecond}); err == nil {
		t.Error("New with Redis down: got nil error, want one")
	}
	if _, err := New(t.Context(), Options{URL: "http://nope"}); err == nil {
		t.Error("New with a non-redis URL: got nil error, want one")
	}
}

// TestStalledServerDeniesWithinTimeout: a Redis that stops answering
// (SIGSTOP: connections stay open) fails every Seen and Remember within
// about the timeout, also with many at once, and they work again once it
// answers. Each used to wait a read timeout per attempt and per command,
// and the calls queued for one of the pool's connections a pool timeout
// per attempt: with 200ms, a lookup took 0.9 s and 300 at once 2.9 s.
func TestStalledServerDeniesWithinTimeout(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 200 * time.Millisecond
	s, err := New(t.Context(), Options{URL: srv.URL(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	if err := s.Remember(t.Context(), k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	const calls = 300
	type result struct {
		took time.Duration
		err  error
	}
	results := make(chan result, calls)
	for i := range calls {
		go func() {
			start := time.Now()
			var err error
			if i%2 == 0 {
				_, err = s.Seen(context.Background(), k, []string{"source:sensitive"}, time.Time{})
			} else {
				err = s.Remember(context.Background(), k, []string{"source:sensitive"}, time.Now())
			}
			results <- result{time.Since(start), err}
		}()
	}
	hang := time.After(30 * time.Second)
	var worst time.Duration
	for range calls {
		select {
		case r := <-results:
			if r.err == nil {
				t.Fatal("a call with Redis stalled: got nil error, want one (the policy denies on it)")
			}
			worst = max(worst, r.took)
		case <-hang:
			t.Fatal("calls with Redis stalled did not return within 30s")
		}
	}
	if worst > 10*timeout {
		t.Errorf("%d calls with Redis stalled: the slowest took %v, want about the %v timeout", calls, worst, timeout)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	var last error
	for range 50 {
		var seen bool
		if seen, last = s.Seen(context.Background(), k, []string{"source:sensitive"}, time.Time{}); last == nil && seen {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("after Redis answers again: %v", last)
}

// BenchmarkStore measures one Seen and one Remember against a local
// redis-server, from 32 goroutines: what route memory in Redis adds to a
// decision that needs it.
func BenchmarkStore(b *testing.B) {
	srv := redistest.Start(b)
	s, err := New(b.Context(), Options{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	labels := []string{"source:sensitive", "@tool:read_document"}
	for _, op := range []string{"Seen", "Remember"} {
		b.Run(op, func(b *testing.B) {
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
				for pb.Next() {
					var err error
					if op == "Seen" {
						_, err = s.Seen(ctx, k, labels, time.Time{})
					} else {
						err = s.Remember(ctx, k, labels, time.Now())
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestRefusesEvictingServer: a Redis that may evict keys when full would
// forget a source silently, so New refuses it; noeviction, or no memory
// limit, is accepted. Retention reports the TTL the policy checks windows
// against.
func TestRefusesEvictingServer(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	admin, err := New(ctx, Options{URL: srv.URL(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if got := admin.Retention(); got != time.Hour {
		t.Errorf("Retention: got %s, want 1h", got)
	}
	for _, tt := range []struct {
		maxmemory, policy string
		ok                bool
	}{
		{"0", "allkeys-lru", true},
		{"100mb", "noeviction", true},
		{"100mb", "allkeys-lru", false},
		{"100mb", "volatile-ttl", false},
	} {
		if err := admin.rdb.ConfigSet(ctx, "maxmemory", tt.maxmemory).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.rdb.ConfigSet(ctx, "maxmemory-policy", tt.policy).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := New(ctx, Options{URL: srv.URL()})
		if s != nil {
			s.Close()
		}
		if tt.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "noeviction")) {
			t.Errorf("maxmemory %s, policy %s: got %v, want ok=%v (an error naming noeviction)", tt.maxmemory, tt.policy, err, tt.ok)
		}
	}
}

// A Redis that loses its data is noticed by every store sharing it: a
// lookup whose window reaches back past the loss is ErrEvicted (not "never
// seen"), one that does not is answered; an operator's "accepted:" clears
// it.
func TestDataLossNoticed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	a, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	if err := a.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(-time.Hour)
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, hour); !seen || err != nil {
		t.Fatalf("before the loss: %v %v", seen, err)
	}
	if err := a.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{b, a} {
		if _, err := s.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
			t.Errorf("after the loss, a window reaching back past it: %v, want ErrEvicted", err)
		}
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, time.Now().Add(time.Second)); seen || err != nil {
		t.Errorf("a window starting after the loss: %v %v, want not seen", seen, err)
	}
	if err := a.rdb.Set(ctx, DefaultKeyPrefix+"epoch", "accepted:1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, hour); seen || err != nil {
		t.Errorf("after the operator accepted the loss: %v %v, want clean", seen, err)
	}
}

// Writes Redis lost while it kept the epoch key (a restart from an RDB
// snapshot or from an AOF fsynced every second, a failover to a replica
// that had not caught up) are not noticed: the memory reads as never
// written. The README says so, and how an operator marks such a loss,
// which every store then takes as one it noticed.
func TestLostWritesMarkedByOperator(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	s, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	if err := s.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(-time.Hour)
	// What a replica that had not caught up holds: the epoch, not the write.
	if err := s.rdb.Del(ctx, s.key(k)).Err(); err != nil {
		t.Fatal(err)
	}
	if seen, err := s.Seen(ctx, k, []string{"source:sensitive"}, hour); seen || err != nil {
		t.Fatalf("a write lost with the epoch kept: %v %v; want not seen (the README's limit)", seen, err)
	}
	lost := time.Now()
	if err := s.rdb.Set(ctx, DefaultKeyPrefix+"epoch", "lost:"+strconv.FormatInt(lost.UnixNano(), 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
		t.Errorf("after the operator marked the loss, a window reaching back past it: %v, want ErrEvicted", err)
	}
	if seen, err := s.Seen(ctx, k, []string{"source:sensitive"}, lost.Add(time.Second)); seen || err != nil {
		t.Errorf("a window starting after the marked loss: %v %v, want not seen", seen, err)
	}
}

// A Redis that loses its data while no gateway runs (restarted without
// persistence overnight) looked, to the next gateway, like one that never
// had any: every agent clean again, its sink allowed after a source
// touched yesterday. With EpochFile the store notes the epoch it saw, and
// a start that finds it gone (or started over) counts as a loss.
func TestDataLossWhileStoppedNoticed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	file := filepath.Join(t.TempDir(), "route-memory-epoch")
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	hour := time.Now().Add(-time.Hour)

	a, err := New(ctx, Options{URL: srv.URL(), EpochFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.Close()

	// A first start with a file: nothing was lost.
	b, err := New(ctx, Options{URL: srv.URL(), EpochFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if seen, err := b.Seen(ctx, k, []string{"source:sensitive"}, hour); !seen || err != nil {
		t.Fatalf("restart, nothing lost: %v %v", seen, err)
	}
	defer b.Close() // its connection flushes Redis below: the loss

	for _, c := range []struct {
		name   string
		before func(*Store)
	}{
		{"lost and found empty", func(*Store) {}},
		{"lost and started over by a gateway that never saw it", func(s *Store) {
			// One without the file (or another replica's) came first.
			fresh, err := New(ctx, Options{URL: srv.URL()})
			if err != nil {
				t.Fatal(err)
			}
			fresh.Close()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := b.rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			c.before(nil)
			s, err := New(ctx, Options{URL: srv.URL(), EpochFile: file})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
				t.Errorf("after a loss while stopped, a window reaching back past it: %v, want ErrEvicted", err)
			}
		})
	}
}

// TestEpochFileUnwritable: the epoch file is what lets a start notice that
// Redis lost its data while no gateway ran (TestDataLossWhileStoppedNoticed).
// A store whose first note of the epoch could not be written (a full disk,
// data_dir missing) started all the same, the error ignored: the next
// start, finding no file, took a Redis emptied meanwhile as new, and every
// agent came back clean. A start that cannot note the epoch is refused,
// naming the file; with room again it starts, and notices a loss.
func TestEpochFileUnwritable(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	hour := time.Now().Add(-time.Hour)
	refused := func(t *testing.T, file string, err error) {
		t.Helper()
		var fe *EpochFileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), file) {
			t.Fatalf("start with an epoch file that cannot be written: %v, want an EpochFileError naming %s", err, file)
		}
	}

	t.Run("disk full", func(t *testing.T) {
		disk := fulldisk.New(t)
		if err := os.MkdirAll(disk.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(disk.Dir, EpochFileName)
		disk.Fill(t)
		s, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "full:", EpochFile: file})
		if err == nil {
			s.Close()
		}
		refused(t, file, err)
		disk.Free(t)

		a, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "full:", EpochFile: file})
		if err != nil {
			t.Fatalf("start with room again: %v", err)
		}
		if err := a.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := a.rdb.FlushAll(ctx).Err(); err != nil { // lost while stopped
			t.Fatal(err)
		}
		a.Close()
		b, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "full:", EpochFile: file})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Seen(ctx, k, []string{"source:sensitive"}, hour); !errors.Is(err, policy.ErrEvicted) {
			t.Errorf("after a loss while stopped: %v, want ErrEvicted", err)
		}
	})

	t.Run("directory missing", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "gone", EpochFileName)
		s, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "gone:", EpochFile: file})
		if err == nil {
			s.Close()
		}
		refused(t, file, err)
	})

	// An earlier note that differs from Redis must be replaced at start:
	// it is kept, and the start refused, when it cannot be.
	t.Run("stale note, disk full", func(t *testing.T) {
		disk := fulldisk.New(t)
		if err := os.MkdirAll(disk.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(disk.Dir, EpochFileName)
		if err := os.WriteFile(file, []byte("fresh:1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		disk.Fill(t)
		s, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "stale:", EpochFile: file})
		if err == nil {
			s.Close()
		}
		refused(t, file, err)
		if b, _ := os.ReadFile(file); string(b) != "fresh:1\n" {
			t.Errorf("the earlier note: %q, want it kept", b)
		}
	})
}

// TestEpochFileWriteFailureReported: a note that cannot be written while
// the store runs (the memory found lost, the file's directory gone) does
// not deny — the running store knows of the loss, and the next start
// compares the older note with Redis — but is reported, so an operator
// learns the next start will refuse.
func TestEpochFileWriteFailureReported(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var reported []error
	s, err := New(ctx, Options{URL: srv.URL(), KeyPrefix: "rt:", EpochFile: filepath.Join(dir, EpochFileName),
		OnEpochFileError: func(err error) { reported = append(reported, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "alice"}
	if err := s.Remember(ctx, k, []string{"source:sensitive"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.FlushAll(ctx).Err(); err != nil { // lost while running
		t.Fatal(err)
	}
	if _, err := s.Seen(ctx, k, []string{"source:sensitive"}, time.Now().Add(-time.Hour)); !errors.Is(err, policy.ErrEvicted) {
		t.Errorf("after a loss while running: %v, want ErrEvicted", err)
	}
	var fe *EpochFileError
	if len(reported) == 0 || !errors.As(reported[0], &fe) {
		t.Errorf("reported: %v, want an EpochFileError", reported)
	}
}

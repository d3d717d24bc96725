package approval

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// eachBackend runs f with each persistent backend: open returns another
// Store on the same file or Redis (another process, or the same one
// restarted).
func eachBackend(t *testing.T, f func(t *testing.T, open func(Options) *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "approvals.db")
		f(t, func(o Options) *Store {
			t.Helper()
			s, err := OpenStore(path, o)
			if err != nil {
				t.Fatalf("OpenStore(%s): %v", path, err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		opt, err := redis.ParseURL(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		f(t, func(o Options) *Store {
			t.Helper()
			s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", o)
			if err != nil {
				t.Fatalf("OpenRedisStore: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// TestPersistRestart: a call held before a restart can be approved after
// it, and the same call then goes through once.
func TestPersistRestart(t *testing.T) { eachBackend(t, testPersistRestart) }

func testPersistRestart(t *testing.T, open func(Options) *Store) {
	ctx := context.Background()
	s1 := open(Options{Timeout: time.Minute})
	d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: s1}, call(`{"amount":5}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" {
		t.Fatalf("first call: got %s %q, want require_approval with an id", d.Verdict, d.ApprovalID)
	}
	id := d.ApprovalID
	sealed, err := s1.SealState(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(Options{Timeout: time.Minute})
	if got, err := s2.Get(id); err != nil || got.Status != Pending {
		t.Fatalf("after restart: got %+v, %v, want %s pending", got, err, id)
	}
	if st, err := s2.OpenState(sealed); err != nil || st.ApprovalID != id {
		t.Errorf("requestState sealed before the restart: got %+v, %v, want it accepted", st, err)
	}
	if _, err := s2.Decide(id, true, "alice"); err != nil {
		t.Fatal(err)
	}
	g := &Gate{Next: holdPay, Store: s2}
	c := call(`{"amount":5}`)
	d = intercept.Decide(ctx, g, c)
	if d.Verdict != intercept.Allow || d.ApprovalID != id {
		t.Fatalf("approved call: got %s %q, want allow by %s", d.Verdict, d.ApprovalID, id)
	}
	if err := g.Forwarded(ctx, c, d); err != nil {
		t.Fatal(err)
	}
	if d := intercept.Decide(ctx, g, call(`{"amount":5}`)); d.Verdict != intercept.RequireApproval || d.ApprovalID == id {
		t.Errorf("second send: got %s %q, want a new hold (the approval is used)", d.Verdict, d.ApprovalID)
	}
	if got, _ := open(Options{Timeout: time.Minute}).Get(id); got.Status != Used || got.Arguments != nil {
		t.Errorf("reopened once more: got %s with arguments %s, want used without arguments", got.Status, got.Arguments)
	}
}

// TestPersistTwoProcesses: two stores on one file (two processes on one
// data directory) see each other's requests; a decision through either
// reaches the one holding the call, and Wait there notices.
func TestPersistTwoProcesses(t *testing.T) { eachBackend(t, testPersistTwoProcesses) }

func testPersistTwoProcesses(t *testing.T, open func(Options) *Store) {
	ctx := context.Background()
	a, b := open(Options{Timeout: time.Minute}), open(Options{Timeout: time.Minute})
	ga := &Gate{Next: holdPay, Store: a}
	d := intercept.Decide(ctx, ga, call(`{"amount":7}`))
	id := d.ApprovalID
	if d.Verdict != intercept.RequireApproval || id == "" {
		t.Fatalf("first call: got %s %q, want require_approval", d.Verdict, id)
	}
	if got := b.List(); len(got) != 1 || got[0].ID != id {
		t.Fatalf("list in the other process: got %v, want [%s]", got, id)
	}
	waited := make(chan Request, 1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() { r, _ := a.Wait(wctx, id); waited <- r }()
	if _, err := b.Decide(id, true, "bob"); err != nil {
		t.Fatal(err)
	}
	if r := <-waited; r.Status != Approved || r.DecidedBy != "bob" {
		t.Fatalf("Wait in the holding process: got %s by %q, want approved by bob", r.Status, r.DecidedBy)
	}
	c := call(`{"amount":7}`)
	d = intercept.Decide(ctx, ga, c)
	if d.Verdict != intercept.Allow {
		t.Fatalf("approved call: got %s, want allow", d.Verdict)
	}
	// The other process cannot spend the same approval twice.
	gb := &Gate{Next: holdPay, Store: b}
	c2 := call(`{"amount":7}`)
	d2 := intercept.Decide(ctx, gb, c2)
	if err := ga.Forwarded(ctx, c, d); err != nil {
		t.Fatal(err)
	}
	if err := gb.Forwarded(ctx, c2, d2); !errors.Is(err, ErrNotPending) {
		t.Errorf("second use from the other process: got %v, want ErrNotPending", err)
	}
	if got, _ := b.Get(id); got.Status != Used {
		t.Errorf("status seen by the other process: got %s, want used", got.Status)
	}
	// Declining from a, seen by b's gate.
	d = intercept.Decide(ctx, gb, call(`{"amount":8}`))
	if _, err := a.Decide(d.ApprovalID, false, "carol"); err != nil {
		t.Fatal(err)
	}
	if d := intercept.Decide(ctx, gb, call(`{"amount":8}`)); d.Verdict != intercept.Deny || d.Reason != ReasonDeclined {
		t.Errorf("declined elsewhere: got %s %s, want deny %s", d.Verdict, d.Reason, ReasonDeclined)
	}
}

// TestPersistHistoryBound: finished requests beyond the history leave the
// file too.
func TestPersistHistoryBound(t *testing.T) { eachBackend(t, testPersistHistoryBound) }

func testPersistHistoryBound(t *testing.T, open func(Options) *Store) {
	ctx := context.Background()
	s := open(Options{Timeout: time.Minute, History: 2})
	g := &Gate{Next: holdPay, Store: s}
	var ids []string
	for i := range 4 {
		d := intercept.Decide(ctx, g, call(`{"n":`+string(rune('0'+i))+`}`))
		ids = append(ids, d.ApprovalID)
		if _, err := s.Decide(d.ApprovalID, false, "x"); err != nil {
			t.Fatal(err)
		}
	}
	s2 := open(Options{Timeout: time.Minute})
	if got := s2.List(); len(got) != 2 || got[0].ID != ids[3] || got[1].ID != ids[2] {
		t.Errorf("after reopening: got %d requests, want the newest 2 (%v)", len(got), ids[2:])
	}
}

// TestRedisStateKeyKeptThroughLoss: a Redis that lost the requestState
// key (restarted without persistence, flushed) gets it back from the
// stores using it at their next operation, so a replica started after the
// loss seals and opens with the same key. Before, it wrote a key of its
// own: a state sealed by any other replica was refused there ("not a
// state this gateway issued"), and its states by them, until every
// replica restarted.
func TestRedisStateKeyKeptThroughLoss(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Store {
		s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a := open()
	admin := redis.NewClient(opt)
	defer admin.Close()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":5}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" {
		t.Fatalf("call held after the loss: got %s %q, want require_approval with an id", d.Verdict, d.ApprovalID)
	}
	sealed, err := a.SealState(d.ApprovalID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := open() // a replica started after the loss
	if st, err := b.OpenState(sealed); err != nil || st.ApprovalID != d.ApprovalID {
		t.Errorf("a state sealed by the replica that ran on: got %+v, %v; want it opened", st, err)
	}
}

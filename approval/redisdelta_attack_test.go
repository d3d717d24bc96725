package approval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// changedRows counts the requests a transaction reads as changed.
type changedRows struct {
	backend
	reads, changed *int
}

func (b changedRows) begin() (backendTx, error) {
	tx, err := b.backend.begin()
	if err != nil {
		return nil, err
	}
	return changedRowsTx{tx, b}, nil
}

type changedRowsTx struct {
	backendTx
	b changedRows
}

func (t changedRowsTx) rows() ([]row, error) {
	*t.b.reads++
	return t.backendTx.rows()
}

func (t changedRowsTx) changes(since string) ([]row, []string, bool, error) {
	rows, gone, ok, err := t.backendTx.changes(since)
	*t.b.changed += len(rows) + len(gone)
	return rows, gone, ok, err
}

func openRedisPair(t *testing.T, o Options) (open func() *Store, flush func()) {
	t.Helper()
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	open = func() *Store {
		t.Helper()
		s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	flush = func() {
		c := redis.NewClient(opt)
		defer c.Close()
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return open, flush
}

// TestAttackRedisStoreWorkPerOperation: every operation of the approvals
// store in Redis (replicas' shared store) read and decoded every held
// call, whatever had changed: with the calls an agent may hold (256 MiB
// of arguments), each waiting call's poll, four times a second on every
// replica, read all of them from Redis. An operation now reads only the
// requests written since its store's last one, nothing when none were,
// and what another replica writes is still seen at once.
func TestAttackRedisStoreWorkPerOperation(t *testing.T) {
	ctx := context.Background()
	open, flush := openRedisPair(t, Options{Timeout: time.Minute})
	a := open()
	reads, changed := 0, 0
	a.be = changedRows{a.be, &reads, &changed}
	g := &Gate{Next: holdPay, Store: a}
	ids := holdFifty(t, g)
	reads, changed = 0, 0
	for range 20 {
		if d := intercept.Decide(ctx, g, pay(7)); d.Verdict != intercept.RequireApproval || d.ApprovalID != ids[7] {
			t.Fatalf("retry of a held call: %s %s %s, want it still held as %s", d.Verdict, d.Reason, d.ApprovalID, ids[7])
		}
	}
	if reads != 0 || changed != 0 {
		t.Errorf("20 retries of a held call with nothing else changed: read every request %d times, %d changed ones; want neither", reads, changed)
	}

	// Another replica approves one: the next retry reads that one only,
	// and the call goes through once.
	b := open()
	if _, err := b.Decide(ids[7], true, "ops"); err != nil {
		t.Fatal(err)
	}
	d := intercept.Decide(ctx, g, pay(7))
	if d.Verdict != intercept.Allow {
		t.Fatalf("after another replica approved it: %s %s, want allow", d.Verdict, d.Reason)
	}
	if reads != 0 || changed != 1 {
		t.Errorf("after another replica approved one call: read every request %d times and %d changed ones; want the one", reads, changed)
	}
	if err := g.Forwarded(ctx, pay(7), d); err != nil {
		t.Fatal(err)
	}
	if d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: b}, pay(7)); d.Verdict == intercept.Allow {
		t.Errorf("the same call through the other replica after the approval was used: %s %s, want it held again", d.Verdict, d.Reason)
	}
	if _, err := b.Decide(ids[8], false, "ops"); err != nil {
		t.Fatal(err)
	}
	if d := intercept.Decide(ctx, g, pay(8)); d.Verdict != intercept.Deny || d.Reason != ReasonDeclined {
		t.Errorf("after another replica declined it: %s %s, want deny %s", d.Verdict, d.Reason, ReasonDeclined)
	}

	// Redis loses everything: the next operation reads it all again, and
	// holds the call anew rather than answer from memory.
	flush()
	reads = 0
	if d := intercept.Decide(ctx, g, pay(9)); d.Verdict != intercept.RequireApproval || d.ApprovalID == ids[9] {
		t.Errorf("after Redis lost the held calls: %s %s %s, want the call held anew", d.Verdict, d.Reason, d.ApprovalID)
	}
	if reads == 0 {
		t.Error("after Redis lost the held calls: the store did not read them again")
	}
	if n := a.Len(); n != 1 {
		t.Errorf("after Redis lost the held calls and one was held: %d live, want 1", n)
	}
}

// TestRedisStoreCatchUpMatchesFullRead: a store that follows another
// replica's writes by what changed ends with what a full read gives:
// the same requests, statuses, links from calls, history and its order,
// and count of live requests, through holds, approvals, declines, uses,
// withdrawals and a history that drops its oldest.
func TestRedisStoreCatchUpMatchesFullRead(t *testing.T) {
	ctx := context.Background()
	open, _ := openRedisPair(t, Options{Timeout: time.Minute, History: 5})
	stores := []*Store{open(), open(), open()}
	reads, changed := 0, 0
	stores[0].be = changedRows{stores[0].be, &reads, &changed}
	check := open() // read whole at every look
	rng := rand.New(rand.NewPCG(1, 2))
	pay := func(agent string, n int) *intercept.ActionDescriptor {
		return &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: agent,
			Parameters: jsontext.Value(fmt.Sprintf(`{"amount":%d}`, n))}
	}
	for step := range 300 {
		if step == 10 { // a call held by now: Redis has a version
			reads, changed = 0, 0
		}
		s := stores[rng.IntN(len(stores))]
		agent := fmt.Sprintf("agent-%d", rng.IntN(3))
		n := rng.IntN(6)
		switch op := rng.IntN(4); op {
		case 0, 1: // a call: held, or let through once approved
			g := &Gate{Next: holdPay, Store: s}
			if d := intercept.Decide(ctx, g, pay(agent, n)); d.Verdict == intercept.Allow {
				if err := g.Forwarded(ctx, pay(agent, n), d); err != nil {
					t.Fatal(err)
				}
			}
		case 2, 3: // an answer to a live one
			live, err := s.Current()
			if err != nil {
				t.Fatal(err)
			}
			if len(live) == 0 {
				continue
			}
			r := live[rng.IntN(len(live))]
			switch {
			case r.Status != Pending:
			case op == 2:
				_, err = s.Decide(r.ID, rng.IntN(2) == 0, "ops")
			default:
				_, err = s.Withdraw(r.ID, r.Agent)
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		a := fullStateOf(t, stores[0], false)
		want := fullStateOf(t, check, true)
		if !reflect.DeepEqual(a, want) {
			t.Fatalf("step %d: the store following changes holds\n%+v\nwhile a full read gives\n%+v", step, a, want)
		}
	}
	if reads != 0 || changed == 0 {
		t.Errorf("the store following changes read every request %d times and %d changed ones; want it to follow the changes", reads, changed)
	}
}

// TestRedisStoreChangesTrimmed: Redis keeps the changes of the last
// versions only, and a store that last read before them reads
// everything, ending with what a full read gives.
func TestRedisStoreChangesTrimmed(t *testing.T) {
	defer func(n int) { changesKept = n }(changesKept)
	changesKept = 2
	ctx := context.Background()
	open, _ := openRedisPair(t, Options{Timeout: time.Minute, History: 3})
	a, b, check := open(), open(), open()
	reads, changed := 0, 0
	a.be = changedRows{a.be, &reads, &changed}
	gb := &Gate{Next: holdPay, Store: b}
	if d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":1}`)); d.Verdict != intercept.RequireApproval {
		t.Fatalf("first call: %s %s, want it held", d.Verdict, d.Reason)
	}
	reads = 0
	for i := range 10 {
		d := intercept.Decide(ctx, gb, call(fmt.Sprintf(`{"amount":%d}`, i+2)))
		if _, err := b.Decide(d.ApprovalID, false, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fullStateOf(t, a, false), fullStateOf(t, check, true); !reflect.DeepEqual(got, want) {
		t.Fatalf("after 20 versions written elsewhere: the store holds\n%+v\nwhile a full read gives\n%+v", got, want)
	}
	if reads != 1 {
		t.Errorf("a store 20 versions behind, with 2 kept: read every request %d times, want once", reads)
	}
	if n := b.be.(*redisBackend).c.ZCard(ctx, "test:changes").Val(); n == 0 || n > 8 {
		t.Errorf("the changes set holds %d ids with 2 versions kept, want the ids of at most 4 versions' writes (2 each)", n)
	}
}

// TestRedisStoreRolledBackReadsEverything: a Redis that loses its last
// writes (a failover to a replica that had not caught up, a restart from
// an older snapshot) numbers the next commits as the lost ones were. A
// store that had read an approval lost so kept it, and let the call
// through on what Redis no longer held, had it read only what was
// written after its version's number.
func TestRedisStoreRolledBackReadsEverything(t *testing.T) {
	ctx := context.Background()
	open, _ := openRedisPair(t, Options{Timeout: time.Minute})
	a, b := open(), open()
	rc := b.be.(*redisBackend).c
	d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":1}`))
	if d.Verdict != intercept.RequireApproval {
		t.Fatalf("first call: %s %s, want it held", d.Verdict, d.Reason)
	}
	// The snapshot Redis will go back to: the call held, not approved.
	keys := rc.Keys(ctx, "test:*").Val()
	dumps := map[string]string{}
	for _, k := range keys {
		dumps[k] = rc.Dump(ctx, k).Val()
	}
	if _, err := b.Decide(d.ApprovalID, true, "ops"); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Get(d.ApprovalID); err != nil || r.Status != Approved {
		t.Fatalf("after the approval: %+v %v, want it approved", r, err)
	}
	for _, k := range rc.Keys(ctx, "test:*").Val() {
		rc.Del(ctx, k)
	}
	for k, v := range dumps {
		if err := rc.Restore(ctx, k, 0, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Another replica writes the next version, numbered as the lost one.
	if d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: b}, call(`{"amount":2}`)); d.Verdict != intercept.RequireApproval {
		t.Fatalf("second call: %s %s, want it held", d.Verdict, d.Reason)
	}
	if d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":1}`)); d.Verdict == intercept.Allow {
		t.Errorf("the call whose approval Redis lost: %s %s, want it held still", d.Verdict, d.Reason)
	}
}

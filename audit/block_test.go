package audit

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/telemetry"
)

// TestBlockQueries writes a few thousand events in blocks of many sizes
// and checks every kind of filter, forwards and backwards, against the
// same filter applied to the events by hand.
func TestBlockQueries(t *testing.T) {
	st, _ := openTest(t, Options{BatchSize: 40})
	defer st.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var all []telemetry.Event
	for i := range 3000 {
		e := telemetry.Event{
			Type: []string{telemetry.TypePolicyEnforced, telemetry.TypeIntentClassified}[i%2], Time: t0.Add(time.Duration(i) * time.Millisecond),
			TxnID: fmt.Sprintf("txn-%d", i/2), Agent: fmt.Sprint("agent-", rng.IntN(5)), Session: fmt.Sprint("s-", rng.IntN(300)),
			Upstream: fmt.Sprint("up-", rng.IntN(3)), Tool: fmt.Sprint("tool-", rng.IntN(20)),
			Decision: []string{"allow", "deny", "require_approval"}[rng.IntN(3)], Reason: "r",
			Attrs: map[string]any{"i": i},
		}
		all = append(all, e)
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(50) == 0 { // cut blocks at random places too
			if err := st.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var blocks int
	if err := st.db.QueryRow("SELECT count(*) FROM blocks").Scan(&blocks); err != nil || blocks < 75 {
		t.Fatalf("got %d blocks (%v), want at least 3000/40", blocks, err)
	}

	ref := func(f Filter, desc bool) []int {
		var out []int
		for i, e := range all {
			seq := int64(i + 1)
			if seq <= f.AfterSeq || (f.Agent != "" && e.Agent != f.Agent) || (f.Session != "" && e.Session != f.Session) ||
				(f.Upstream != "" && e.Upstream != f.Upstream) || (f.Tool != "" && e.Tool != f.Tool) ||
				(f.Decision != "" && e.Decision != f.Decision) || (f.Type != "" && e.Type != f.Type) ||
				(f.TxnID != "" && e.TxnID != f.TxnID) || (!f.Since.IsZero() && e.Time.Before(f.Since)) ||
				(!f.Until.IsZero() && !e.Time.Before(f.Until)) {
				continue
			}
			out = append(out, i)
		}
		if desc {
			slices.Reverse(out)
		}
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		return out
	}
	filters := map[string]Filter{
		"all":           {},
		"agent":         {Agent: "agent-3"},
		"session":       {Session: "s-17"},
		"upstream":      {Upstream: "up-1"},
		"tool":          {Tool: "tool-7"},
		"decision":      {Decision: "deny"},
		"type":          {Type: telemetry.TypeIntentClassified},
		"txn":           {TxnID: "txn-777"},
		"txn missing":   {TxnID: "txn-9999"},
		"since":         {Since: t0.Add(2500 * time.Millisecond)},
		"until":         {Until: t0.Add(100 * time.Millisecond)},
		"range":         {Since: t0.Add(time.Second), Until: t0.Add(1100 * time.Millisecond)},
		"after seq":     {AfterSeq: 2990},
		"limit":         {Limit: 7},
		"combined":      {Agent: "agent-1", Tool: "tool-2", Decision: "allow"},
		"combined+time": {Agent: "agent-1", Since: t0.Add(time.Second), Limit: 30},
		"none":          {Agent: "nobody"},
		"page":          {Session: "s-5", AfterSeq: 1500, Limit: 3},
	}
	for name, f := range filters {
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/desc=%v", name, desc), func(t *testing.T) {
				var got []int
				err := st.scan(ctx, f, desc, func(e telemetry.Event) error {
					i := int(e.Seq) - 1
					if i < 0 || i >= len(all) || e.TxnID != all[i].TxnID || e.Agent != all[i].Agent || !e.Time.Equal(all[i].Time) {
						t.Fatalf("event with seq %d is not event %d: %+v", e.Seq, i, e)
					}
					got = append(got, i)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(ref(f, desc), got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
	if seq, err := st.LastSeq(ctx); err != nil || seq != 3000 {
		t.Errorf("LastSeq: got %d, %v; want 3000", seq, err)
	}
}

// TestLargeEventsSplitBlocks checks that a run of large events (arguments
// kept) is stored in several blocks rather than one huge row.
func TestLargeEventsSplitBlocks(t *testing.T) {
	st, _ := openTest(t, Options{})
	defer st.Close()
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20)
	for i := range 10 {
		if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", TxnID: fmt.Sprint(i), Attrs: map[string]any{"arguments": big}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var blocks int
	if err := st.db.QueryRow("SELECT count(*) FROM blocks").Scan(&blocks); err != nil || blocks < 3 {
		t.Errorf("10 events of 1 MiB: got %d blocks (%v), want at least 3", blocks, err)
	}
	got, err := st.Query(ctx, Filter{TxnID: "9"})
	if err != nil || len(got) != 1 || got[0].Attrs["arguments"] != big {
		t.Errorf("the last large event: got %d events, %v", len(got), err)
	}
}

// TestWriteBlockRetry checks that retrying a block whose first attempt
// committed despite reporting an error stores it once, and that a retry
// after an attempt that did not commit stores it.
func TestWriteBlockRetry(t *testing.T) {
	st, _ := openTest(t, Options{})
	defer st.Close()
	ctx := context.Background()
	mk := func(txn string) block {
		p, err := st.encode(telemetry.Event{Type: "sluice.test", TxnID: txn}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := newBlock([]*pending{&p}, nil)
		return b
	}
	// The writer goroutine is idle: nothing was appended.
	b := mk("a")
	if err := st.writeBlock(&b, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.writeBlock(&b, b.first); err != nil { // as if COMMIT had reported an error
		t.Fatal(err)
	}
	other := mk("b")
	if err := st.writeBlock(&other, b.first); err != nil { // a different block at that seq: not ours
		t.Fatal(err)
	}
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var txns []string
	for _, e := range got {
		txns = append(txns, e.TxnID)
	}
	if diff := cmp.Diff([]string{"a", "b"}, txns); diff != "" {
		t.Errorf("events after a retried block (-want +got):\n%s", diff)
	}
}

// TestMigrateFromSchema1 opens a database written by the previous schema
// (a row per event) and checks that its events, seqs included, are all
// there afterwards, in blocks, and that the CLI's read-only open of an
// unmigrated one says what to do.
func TestMigrateFromSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE events (
		seq INTEGER PRIMARY KEY, id TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,
		txn_id TEXT NOT NULL DEFAULT '', agent TEXT NOT NULL DEFAULT '', session TEXT NOT NULL DEFAULT '',
		upstream TEXT NOT NULL DEFAULT '', tool TEXT NOT NULL DEFAULT '', decision TEXT NOT NULL DEFAULT '',
		reason TEXT NOT NULL DEFAULT '', attrs TEXT);
		CREATE INDEX events_agent ON events(agent, time);
		PRAGMA user_version = 1;`)
	if err != nil {
		t.Fatal(err)
	}
	// 2500 rows with a gap in seq (a block cannot span it) and a row
	// without attrs.
	for i := 1; i <= 2500; i++ {
		seq := i
		if i > 1200 {
			seq += 10
		}
		var attrs any = fmt.Sprintf(`{"n":%d,"big":12345678901234567890}`, i)
		if i == 7 {
			attrs = nil
		}
		if _, err := db.Exec(`INSERT INTO events (seq, id, type, time, txn_id, agent, decision, attrs) VALUES (?,?,?,?,?,?,?,?)`,
			seq, fmt.Sprint("id-", i), telemetry.TypePolicyEnforced, t0.Add(time.Duration(i)*time.Second).UnixNano(),
			fmt.Sprint("txn-", i), fmt.Sprint("agent-", i%3), "allow", attrs); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	if _, err := Open(path, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "start the gateway") {
		t.Errorf("read-only open of a schema-1 database: got %v, want an error saying how to upgrade it", err)
	}
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a schema-1 database: %v", err)
	}
	defer st.Close()
	ctx := context.Background()
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2500 {
		t.Fatalf("got %d events after the upgrade, want 2500", len(got))
	}
	for _, e := range []telemetry.Event{got[0], got[6], got[1199], got[1200], got[2499]} {
		i := 0
		fmt.Sscanf(e.ID, "id-%d", &i)
		wantSeq := int64(i)
		if i > 1200 {
			wantSeq += 10
		}
		if e.Seq != wantSeq || e.TxnID != fmt.Sprint("txn-", i) || !e.Time.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Errorf("event %s: got seq %d txn %s time %v", e.ID, e.Seq, e.TxnID, e.Time)
		}
		if i == 7 && e.Attrs != nil {
			t.Errorf("event 7 had no attrs, got %v", e.Attrs)
		}
		if i != 7 && fmt.Sprint(e.Attrs["big"]) != "12345678901234567890" {
			t.Errorf("event %d: attrs %v, want the big number exact", i, e.Attrs)
		}
	}
	if got, err := st.Query(ctx, Filter{Agent: "agent-1", Since: t0.Add(2400 * time.Second)}); err != nil || len(got) != 34 {
		t.Errorf("agent-1 since event 2400: got %d events (%v), want 34", len(got), err)
	}
	var n int
	if err := st.db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'events'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the old events table is still there (%d, %v)", n, err)
	}
	// New events follow the old ones.
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if seq, err := st.LastSeq(ctx); err != nil || seq != 2511 {
		t.Errorf("LastSeq after one more event: got %d, %v; want 2511", seq, err)
	}
}

// TestRetention writes old and new events, reopens the store with a
// retention, and checks that the old blocks are gone, index rows and all,
// while the newest block stays even when it is old too.
func TestRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path, Options{Linger: time.Hour}) // only the Flushes end batches
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(at time.Time, n int, agent string) {
		for i := range n {
			if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Time: at, Agent: agent, TxnID: fmt.Sprint(agent, i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Flush(ctx); err != nil { // one block per call
			t.Fatal(err)
		}
	}
	write(t0, 10, "old\nline") // a key with a newline in it is deleted too
	write(t0.Add(time.Minute), 5, "old2")
	write(t0.Add(3*time.Hour), 7, "new")
	write(t0.Add(-time.Hour), 2, "late") // newest block, but old: kept
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	var pruned []int64
	st, err = Open(path, Options{Retention: 2 * time.Hour, Now: func() time.Time { return t0.Add(4 * time.Hour) },
		OnPrune: func(n int64, err error) {
			if err != nil {
				t.Error(err)
			}
			pruned = append(pruned, n)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(ctx); err != nil { // the writer prunes before it takes the flush
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{15}, pruned); diff != "" {
		t.Errorf("OnPrune (-want +got):\n%s", diff)
	}
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, e := range got {
		if len(agents) == 0 || agents[len(agents)-1] != e.Agent {
			agents = append(agents, e.Agent)
		}
	}
	if diff := cmp.Diff([]string{"new", "late"}, agents); diff != "" || len(got) != 9 || got[0].Seq != 16 {
		t.Errorf("after pruning: %d events from seq %d, agents (-want +got):\n%s", len(got), got[0].Seq, diff)
	}
	var keys, data int
	if err := st.db.QueryRow("SELECT (SELECT count(*) FROM block_keys WHERE key LIKE 'agent=old%'), (SELECT count(*) FROM block_data)").Scan(&keys, &data); err != nil {
		t.Fatal(err)
	}
	if keys != 0 || data != 2 {
		t.Errorf("after pruning: %d index rows of pruned agents, %d blocks of events; want 0 and 2", keys, data)
	}
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if seq, _ := st.LastSeq(ctx); seq != 25 {
		t.Errorf("seq after pruning: got %d, want 25 (seq never goes back)", seq)
	}
}

// TestInvalidUTF8Values checks that an event whose agent is not valid
// UTF-8 (a header value can carry any byte) is found by that agent and
// pruned without leaving index rows behind.
func TestInvalidUTF8Values(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, at := range []time.Time{t0, t0.Add(3 * time.Hour)} {
		if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Time: at, Agent: "caf\xe9", TxnID: "t\xff"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []Filter{{Agent: "caf\xe9"}, {Agent: "caf\ufffd"}, {TxnID: "t\xff"}} {
		if got, err := st.Query(ctx, f); err != nil || len(got) != 2 {
			t.Errorf("Query(%+q): got %d events, %v; want 2", f.Agent+f.TxnID, len(got), err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(path, Options{Retention: time.Hour, Now: func() time.Time { return t0.Add(4 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var orphans int
	if err := st.db.QueryRow("SELECT count(*) FROM block_keys WHERE first_seq NOT IN (SELECT first_seq FROM blocks)").Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("index rows of pruned blocks: %d (%v), want 0", orphans, err)
	}
}

// TestScanWhilePruning checks that a block pruned between a query listing
// it and reading it is passed over, not an error.
func TestScanWhilePruning(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.Add(time.Hour).UnixNano())
	pruned := make(chan int64, 10)
	st, _ := openTest(t, Options{Retention: time.Hour, PruneInterval: 5 * time.Millisecond,
		Now:     func() time.Time { return time.Unix(0, now.Load()) },
		OnPrune: func(n int64, err error) { pruned <- n }})
	defer st.Close()
	ctx := context.Background()
	for i := range 3 {
		if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Time: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	err := st.Scan(ctx, Filter{}, func(e telemetry.Event) error {
		if n++; n == 1 {
			now.Store(t0.Add(3 * time.Hour).UnixNano())
			<-pruned // blocks 2 (and 1) are gone; 3 is the newest, kept
		}
		return nil
	})
	if err != nil {
		t.Errorf("Scan while pruning: %v", err)
	}
	if n != 2 {
		t.Errorf("Scan while pruning: got %d events, want the first and the newest", n)
	}
}

// TestEarlySchema2GetsKeys opens a database written before blocks had a
// keys column and checks that it is added, filled in from block_keys, so
// that writing and pruning work.
func TestEarlySchema2GetsKeys(t *testing.T) {
	st, path := openTest(t, Options{})
	ctx := context.Background()
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Time: t0, Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ALTER TABLE blocks DROP COLUMN keys"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err = Open(path, Options{Retention: time.Hour, Now: func() time.Time { return t0.Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Agent: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatalf("writing to an upgraded database: %v", err)
	}
	var keys string
	if err := st.db.QueryRow("SELECT keys FROM blocks WHERE first_seq = 1").Scan(&keys); err != nil || keys != `["agent=a","type=sluice.test"]` {
		t.Errorf("keys of the old block: got %q, %v", keys, err)
	}
}

// TestFlushDoesNotLinger checks that a Flush queued behind a batch cut
// short by its size is committed at once, not after the linger.
func TestFlushDoesNotLinger(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	synctest.Test(t, func(t *testing.T) {
		hold, release := holdFirstBatch()
		st, err := Open(path, Options{Linger: time.Hour, beforeWrite: hold})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		big := strings.Repeat("x", 1<<20)
		if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Attrs: map[string]any{"a": big}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the writer lingers over the first event
		for range 5 {
			if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Attrs: map[string]any{"a": big}}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		flushed := make(chan error, 1)
		go func() { flushed <- st.Flush(ctx) }()
		synctest.Wait()
		close(release)
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Flush waited %v of the linger", d)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCloseDoesNotLinger checks that Close writes at once an event the
// writer lingers over, or has not yet taken when Close comes.
func TestCloseDoesNotLinger(t *testing.T) {
	for _, lingering := range []bool{true, false} {
		t.Run(fmt.Sprint("lingering=", lingering), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			synctest.Test(t, func(t *testing.T) {
				st, err := Open(path, Options{Linger: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Append(context.Background(), telemetry.Event{Type: "sluice.test"}); err != nil {
					t.Fatal(err)
				}
				if lingering {
					synctest.Wait()
				}
				start := time.Now()
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Close waited %v of the linger", d)
				}
			})
			st, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got, err := st.Query(context.Background(), Filter{}); err != nil || len(got) != 1 {
				t.Errorf("after Close: %d events, %v; want 1", len(got), err)
			}
		})
	}
}

// TestBloomHashIsFNV1a holds bloomHash to hash/fnv's FNV-1a: the filters
// already stored were made with it.
func TestBloomHashIsFNV1a(t *testing.T) {
	for _, id := range []string{"", "a", "0c5f9e0b8d3a4f1e9a7b6c5d4e3f2a1b", "caf\xe9", strings.Repeat("x", 1000)} {
		h := fnv.New64a()
		h.Write([]byte(id))
		s := h.Sum64()
		if h1, h2 := bloomHash(id); h1 != uint32(s) || h2 != uint32(s>>32)|1 {
			t.Errorf("bloomHash(%q) = %#x, %#x; want %#x, %#x", id, h1, h2, uint32(s), uint32(s>>32)|1)
		}
	}
}

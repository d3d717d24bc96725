package audit

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", FileName)
	st, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st, path
}

// sample returns a mix of event types about a few agents and tools.
func sample() []telemetry.Event {
	return []telemetry.Event{
		telemetry.PolicyEnforcement{
			Time: t0, TxnID: "txn-1", Agent: "alice", Session: "s1", Upstream: "github", Tool: "create_issue",
			CallID: "7", Decision: "deny", Reason: "tool_denied", PublicReason: "calling create_issue is not allowed",
			PolicyVersion: "v3", RuleID: "static.deny", Latency: 41 * time.Microsecond,
			Evidence:  telemetry.Evidence{MatchedToolName: "create_issue", MatchedToolClasses: []string{"sink.external"}, ReasonCode: "tool_denied"},
			Arguments: telemetry.Redactor{}.Arguments([]byte(`{"title":"x","token":"ghp_secret"}`)),
		}.Event(),
		telemetry.IntentClassification{
			Time: t0.Add(time.Millisecond), TxnID: "txn-1", Agent: "alice", Session: "s1", Upstream: "github", Tool: "create_issue",
			ClassifierID: "urn:sluice:classifier:s1", CapabilityClassDeclared: "dev.issues", CapabilityClassVerdict: "dev.issues",
			ConsistentWithDeclaration: true, CompositeConfidence: 0.87, ActiveProfile: "default", ClassifiedAt: t0.Unix(),
			Axes: map[string]telemetry.AxisClassification{"action_type": {Classified: "Write", Confidence: 0.9, Source: "llm"}},
		}.Event(),
		telemetry.PolicyEnforcement{
			Time: t0.Add(time.Second), TxnID: "txn-2", Agent: "bob", Session: "s2", Upstream: "fs", Tool: "read_file",
			Decision: "allow", Reason: "tool_allowed",
		}.Event(),
		telemetry.BreakerChange{Time: t0.Add(2 * time.Second), Upstream: "github", From: "closed", To: "open"}.Event(),
		telemetry.PolicyEnforcement{
			Time: t0.Add(3 * time.Second), TxnID: "txn-3", Agent: "alice", Session: "s1", Upstream: "fs", Tool: "read_file",
			Decision: "require_approval", Reason: "approval_required",
		}.Event(),
	}
}

func appendAll(t *testing.T, st *Store, evs []telemetry.Event) {
	t.Helper()
	for _, e := range evs {
		if err := st.Append(context.Background(), e); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

// normalize drops what the store adds (seq, ids) and turns typed attrs
// into their JSON form, so events can be compared with what was read.
func normalize(t *testing.T, evs []telemetry.Event) []telemetry.Event {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range evs {
		if err := writeJSONLine(&buf, e); err != nil {
			t.Fatal(err)
		}
	}
	var out []telemetry.Event
	if err := ReadJSONL(&buf, func(e telemetry.Event) error {
		e.Seq, e.ID = 0, ""
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestart(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	want := sample()
	appendAll(t, st, want)
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	st, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer st.Close()
	got, err := st.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d: got seq %d, want %d", i, e.Seq, i+1)
		}
		if e.ID == "" {
			t.Errorf("event %d has no id", i)
		}
	}
	if diff := cmp.Diff(normalize(t, want), normalize(t, got)); diff != "" {
		t.Errorf("events after restart (-want +got):\n%s", diff)
	}

	// Typed events decode back from what was stored.
	var pe telemetry.PolicyEnforcement
	if err := got[0].Decode(&pe); err != nil {
		t.Fatal(err)
	}
	if pe.RuleID != "static.deny" || pe.Latency != 41*time.Microsecond || pe.Evidence.MatchedToolClasses[0] != "sink.external" || pe.SHA256 == "" || pe.Value != nil {
		t.Errorf("decoded policy event: got %+v", pe)
	}
	if !pe.Time.Equal(t0) {
		t.Errorf("decoded time: got %v, want %v", pe.Time, t0)
	}
	var ic telemetry.IntentClassification
	if err := got[1].Decode(&ic); err != nil {
		t.Fatal(err)
	}
	if ic.CompositeConfidence != 0.87 || ic.Axes["action_type"].Classified != "Write" || !ic.ConsistentWithDeclaration {
		t.Errorf("decoded classification: got %+v", ic)
	}
}

func TestQueryFilters(t *testing.T) {
	st, _ := openTest(t, Options{})
	defer st.Close()
	appendAll(t, st, sample())
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    Filter
		want []string // txn ids, or types for events without one
	}{
		{"all", Filter{}, []string{"txn-1", "txn-1", "txn-2", "sluice.breaker_state_changed", "txn-3"}},
		{"agent", Filter{Agent: "alice"}, []string{"txn-1", "txn-1", "txn-3"}},
		{"session", Filter{Session: "s2"}, []string{"txn-2"}},
		{"tool", Filter{Tool: "read_file"}, []string{"txn-2", "txn-3"}},
		{"upstream", Filter{Upstream: "github"}, []string{"txn-1", "txn-1", "sluice.breaker_state_changed"}},
		{"decision", Filter{Decision: "deny"}, []string{"txn-1"}},
		{"type", Filter{Type: telemetry.TypeIntentClassified}, []string{"txn-1"}},
		{"txn", Filter{TxnID: "txn-1"}, []string{"txn-1", "txn-1"}},
		{"since", Filter{Since: t0.Add(time.Second)}, []string{"txn-2", "sluice.breaker_state_changed", "txn-3"}},
		{"until", Filter{Until: t0.Add(time.Second)}, []string{"txn-1", "txn-1"}},
		{"range", Filter{Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second)}, []string{"txn-2", "sluice.breaker_state_changed"}},
		{"limit", Filter{Limit: 2}, []string{"txn-1", "txn-1"}},
		{"after seq", Filter{AfterSeq: 3, Limit: 1}, []string{"sluice.breaker_state_changed"}},
		{"combined", Filter{Agent: "alice", Tool: "read_file", Decision: "require_approval"}, []string{"txn-3"}},
		{"none", Filter{Agent: "mallory"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := st.Query(context.Background(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				if e.TxnID != "" {
					got = append(got, e.TxnID)
				} else {
					got = append(got, e.Type)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Query(%+v) (-want +got):\n%s", tt.f, diff)
			}
		})
	}
}

func TestAppendStampsTimeAndID(t *testing.T) {
	st, _ := openTest(t, Options{Sync: true, Now: func() time.Time { return t0 }})
	defer st.Close()
	ctx := context.Background()
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != nil {
		t.Fatal(err)
	}
	given := telemetry.Event{ID: "fixed", Type: "sluice.test", Time: t0.Add(time.Second)}
	if err := st.Append(ctx, given); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, telemetry.Event{}); err == nil {
		t.Error("Append of an event without a type: got nil error, want one")
	}
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d events, want 2", len(got))
	}
	if !got[0].Time.Equal(t0) || len(got[0].ID) != 36 {
		t.Errorf("stamped event: got time %v id %q, want %v and a UUID", got[0].Time, got[0].ID, t0)
	}
	if !got[1].Time.Equal(given.Time) || got[1].ID != "fixed" {
		t.Errorf("event with its own id and time: got %v %q, want %v %q", got[1].Time, got[1].ID, given.Time, given.ID)
	}
}

// TestBackpressure holds the writer, fills the queue and checks that
// further Appends wait, rather than return or drop, until the writer
// goes on; then that every event was written.
func TestBackpressure(t *testing.T) {
	const queue, waiting = 4, 10
	path := filepath.Join(t.TempDir(), FileName) // outlives the bubble's t
	synctest.Test(t, func(t *testing.T) {
		held, release := make(chan struct{}), make(chan struct{})
		first := true // only the writer goroutine touches it
		var depth atomic.Int64
		st, err := Open(path, Options{
			QueueSize: queue,
			Depth:     depthFunc(func(n int) { depth.Store(int64(n)) }),
			beforeWrite: func() {
				if first {
					first = false
					close(held)
					<-release
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		ev := func(i int) telemetry.Event {
			return telemetry.Event{Type: "sluice.test", TxnID: fmt.Sprint(i), Time: t0}
		}
		if err := st.Append(ctx, ev(0)); err != nil {
			t.Fatal(err)
		}
		<-held // the writer has taken event 0 and waits
		for i := 1; i <= queue; i++ {
			if err := st.Append(ctx, ev(i)); err != nil {
				t.Fatal(err)
			}
		}

		var returned atomic.Int64
		var wg sync.WaitGroup
		for i := queue + 1; i <= queue+waiting; i++ {
			wg.Go(func() {
				if err := st.Append(ctx, ev(i)); err != nil {
					t.Error(err)
				}
				returned.Add(1)
			})
		}
		synctest.Wait() // every Append is blocked or done
		if n := returned.Load(); n != 0 {
			t.Fatalf("%d Appends returned while the queue was full, want 0", n)
		}

		// A caller that gives up gets an error, not a silent drop.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := st.Append(cctx, ev(999)); err == nil {
			t.Error("Append with a cancelled context on a full queue: got nil error, want one")
		}

		close(release)
		wg.Wait()
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if d := depth.Load(); d != 0 {
			t.Errorf("queue depth after flush: got %d, want 0", d)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	})

	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.TxnID] = true
	}
	for i := 0; i <= queue+waiting; i++ {
		if !seen[fmt.Sprint(i)] {
			t.Errorf("event %d is missing", i)
		}
	}
	if len(got) != queue+waiting+1 {
		t.Errorf("got %d events, want %d", len(got), queue+waiting+1)
	}
}

type depthFunc func(int)

func (f depthFunc) QueueDepth(n int) { f(n) }

func TestCloseWritesQueued(t *testing.T) {
	st, path := openTest(t, Options{BatchSize: 7})
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", TxnID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test"}); err != ErrClosed {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("got %d events after Close, want %d", len(got), n)
	}
}

func TestTail(t *testing.T) {
	st, _ := openTest(t, Options{Sync: true})
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	appendN := func(from, to int) {
		for i := from; i < to; i++ {
			agent := "a"
			if i == 7 {
				agent = "b" // filtered out
			}
			if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Agent: agent, TxnID: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(0, 5)
	got := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- st.Tail(ctx, Filter{Agent: "a", Limit: 2}, func(e telemetry.Event) error {
			got <- e.TxnID
			return nil
		})
	}()
	var seq []string
	next := func() { seq = append(seq, <-got) }
	next()
	next() // the last two existing ones are shown before anything new is appended
	appendN(5, 10)
	for seq[len(seq)-1] != "9" {
		next()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Tail: %v", err)
	}
	if diff := cmp.Diff([]string{"3", "4", "5", "6", "8", "9"}, seq); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
}

func TestReadOnly(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	appendAll(t, st, sample())
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Append(context.Background(), sample()[0]); err != ErrReadOnly {
		t.Errorf("Append on a read-only store: got %v, want ErrReadOnly", err)
	}
	got, err := ro.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sample()) {
		t.Errorf("read-only store sees %d events while the writer is open, want %d", len(got), len(sample()))
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.db"), Options{ReadOnly: true}); err == nil {
		t.Error("read-only Open of a missing file: got nil error, want one")
	}
}

func TestExportJSONL(t *testing.T) {
	st, _ := openTest(t, Options{Sync: true})
	defer st.Close()
	want := sample()
	appendAll(t, st, want)
	var buf bytes.Buffer
	if err := st.Export(context.Background(), &buf, Filter{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(buf.Bytes(), []byte("\n"))
	if lines != 3 {
		t.Errorf("export wrote %d lines, want 3:\n%s", lines, buf.String())
	}
	var got []telemetry.Event
	if err := ReadJSONL(&buf, func(e telemetry.Event) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalize(t, []telemetry.Event{want[0], want[1], want[4]}), normalize(t, got)); diff != "" {
		t.Errorf("exported events (-want +got):\n%s", diff)
	}
}

// holdFirstBatch returns a beforeWrite hook that holds the writer before
// its first batch until release is closed.
func holdFirstBatch() (hook func(), release chan struct{}) {
	release = make(chan struct{})
	first := true // only the writer goroutine touches it
	return func() {
		if first {
			first = false
			<-release
		}
	}, release
}

// TestBatchShapes writes batches of sizes around the number of index
// keys one insert adds (each event has its own session), each ending with
// a Flush marker, and checks every event arrived and is found by its key.
func TestBatchShapes(t *testing.T) {
	for _, n := range []int{1, keysPerInsert - 1, keysPerInsert, keysPerInsert + 1, 2 * keysPerInsert, 2*keysPerInsert + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			synctest.Test(t, func(t *testing.T) {
				hold, release := holdFirstBatch()
				st, err := Open(path, Options{beforeWrite: hold})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				// Event 0 is taken alone by the held writer; 1..n and the
				// flush marker then form the next batch.
				for i := 0; i <= n; i++ {
					if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", TxnID: fmt.Sprint(i), Session: fmt.Sprint("s", i)}); err != nil {
						t.Fatal(err)
					}
				}
				flushed := make(chan error, 1)
				go func() { flushed <- st.Flush(ctx) }()
				synctest.Wait()
				close(release)
				if err := <-flushed; err != nil {
					t.Fatal(err)
				}
				got, err := st.Query(ctx, Filter{})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != n+1 {
					t.Errorf("got %d events after Flush, want %d", len(got), n+1)
				}
				for _, i := range []int{0, n / 2, n} {
					got, err := st.Query(ctx, Filter{Session: fmt.Sprint("s", i)})
					if err != nil || len(got) != 1 || got[0].TxnID != fmt.Sprint(i) {
						t.Errorf("session s%d: got %v, %v; want event %d", i, got, err, i)
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

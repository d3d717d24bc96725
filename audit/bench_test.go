package audit

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// benchEvent is a policy event of typical size, built once: the
// benchmarks measure the store, not event construction.
func benchEvent() telemetry.Event {
	return telemetry.PolicyEnforcement{
		TxnID: "0c5f9e0b8d3a4f1e9a7b6c5d4e3f2a1b", Agent: "claude-code", Session: "018f4e1d-7e5d", Upstream: "github",
		Tool: "create_issue", CallID: "42", Decision: "allow", Reason: "tool_allowed", PolicyVersion: "v7",
		RuleID: "route.allow_issues", Latency: 35 * time.Microsecond,
		Evidence:  telemetry.Evidence{MatchedToolName: "create_issue", MatchedToolClasses: []string{"sink.external"}},
		Arguments: telemetry.Arguments{SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	}.Event()
}

// BenchmarkAppend appends from many goroutines, acknowledged on enqueue,
// and counts until everything is committed: the store's sustained write
// rate.
func BenchmarkAppend(b *testing.B) {
	benchAppend(b, Options{})
}

// BenchmarkAppendSync is the same with every Append waiting for its
// fsynced commit, 64 callers at a time (group commit).
func BenchmarkAppendSync(b *testing.B) {
	benchAppend(b, Options{Sync: true}, 64)
}

// BenchmarkAppendSyncLatency is one caller waiting for each fsynced
// commit in turn: the latency sync: commit adds to an allowed call.
func BenchmarkAppendSyncLatency(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), FileName), Options{Sync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ev := benchEvent()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ev.TxnID = benchTxnID()
		if err := st.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}

func benchAppend(b *testing.B, opts Options, parallelism ...int) {
	st, err := Open(filepath.Join(b.TempDir(), FileName), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ev := benchEvent()
	ctx := context.Background()
	if len(parallelism) > 0 {
		b.SetParallelism(parallelism[0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		ev := ev
		for pb.Next() {
			// A new txn_id per event, as the gateway does, so that the
			// index on it is exercised as it is in production.
			ev.TxnID = benchTxnID()
			if err := st.Append(ctx, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	// The machine is shared, so wall-clock rates swing with others' load;
	// events per second of this process's CPU time do not.
	b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
}

var benchTxnSeq atomic.Uint64

// benchTxnID returns a new txn_id shaped like intercept.NewTxnID's: time
// first, so ids sort by time.
func benchTxnID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(time.Now().UnixMilli())<<16)
	binary.BigEndian.PutUint64(b[8:], benchTxnSeq.Add(1)*0x9e3779b97f4a7c15)
	return hex.EncodeToString(b[:])
}

// cpuTime is the user and system CPU time used by this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQuery reads 100 events of one agent out of 20,000.
func BenchmarkQuery(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	ev := benchEvent()
	for i := range 20_000 {
		ev.Agent = []string{"a", "b", "c", "d"}[i%4]
		if err := st.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		evs, err := st.Query(ctx, Filter{Agent: "c", Limit: 100})
		if err != nil || len(evs) != 100 {
			b.Fatalf("got %d events, %v", len(evs), err)
		}
	}
}

// BenchmarkQueryMillion queries a store of 1,000,000 policy events (one a
// millisecond, 50 agents, 40 tools, 20 calls a session) the ways an
// operator does.
func BenchmarkQueryMillion(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const n = 1_000_000
	txn := func(i int) string { return fmt.Sprintf("%016x%016x", i, i*7919) }
	for i := range n {
		r := telemetry.PolicyEnforcement{Time: t0.Add(time.Duration(i) * time.Millisecond), TxnID: txn(i), Agent: fmt.Sprint("agent-", i%50),
			Session: fmt.Sprint("s-", i/20), Upstream: "github", Tool: fmt.Sprint("tool-", i%40), Decision: "allow", Reason: "tool_allowed",
			PolicyVersion: "v1", RuleID: "r1", Latency: 30 * time.Microsecond, Arguments: telemetry.Arguments{SHA256: fmt.Sprintf("%064x", i)}}
		if err := st.AppendRecord(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	end := t0.Add(n * time.Millisecond)
	for _, q := range []struct {
		name string
		f    Filter
		want int
	}{
		{"agent-limit-100", Filter{Agent: "agent-7", Limit: 100}, 100},
		{"txn", Filter{TxnID: txn(777_777)}, 1},
		{"last-minute", Filter{Since: end.Add(-time.Minute)}, 60_000},
		{"tool+agent-last-10m", Filter{Tool: "tool-3", Agent: "agent-3", Since: end.Add(-10 * time.Minute)}, 3000},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if evs, err := st.Query(ctx, q.f); err != nil || len(evs) != q.want {
					b.Fatalf("got %d events, %v; want %d", len(evs), err, q.want)
				}
			}
		})
	}
}

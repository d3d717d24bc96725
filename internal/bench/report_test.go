package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	res := func(calls int, each time.Duration) *Result {
		r := &Result{Calls: calls, Elapsed: time.Second}
		for range calls {
			r.Latencies = append(r.Latencies, each)
		}
		return r
	}
	up := Sample{CPU: 100 * time.Millisecond}
	var r Report
	r.Rows = append(r.Rows,
		NewRow("direct", 1, res(1000, time.Millisecond), "upstream", Sample{CPU: 100 * time.Millisecond, RSS: 10 << 20}, up),
		NewRow("bare", 1, res(800, time.Millisecond), "proxy", Sample{CPU: 40 * time.Millisecond, RSS: 8 << 20}, up),
		NewRow("sluice", 1, res(1000, time.Millisecond), "proxy", Sample{CPU: 30 * time.Millisecond, RSS: 12 << 20}, up),
	)
	failed := res(10, time.Millisecond)
	failed.Errors, failed.FirstErr = 2, errors.New("status 403")
	r.Rows = append(r.Rows, NewRow("sluice", 32, failed, "proxy", Sample{}, up))
	r.AddRatios("sluice", "bare")

	if got, want := r.Rows[1].CPUPerCallUs, 50.0; got != want {
		t.Errorf("bare CPU per call = %v µs, want %v", got, want)
	}
	if got, want := r.Rows[1].RSSMiB, 8.0; got != want {
		t.Errorf("bare RSS = %v MiB, want %v", got, want)
	}
	if got, want := len(r.Ratios), 1; got != want {
		t.Fatalf("%d ratios, want %d (c=32 has no bare row)", got, want)
	}
	if q := r.Ratios[0]; q.Throughput != 1.25 || q.CPU != 0.6 {
		t.Errorf("ratio = %+v, want throughput 1.25 and CPU 0.6", q)
	}
	if got, want := r.Errors(), 2; got != want {
		t.Errorf("Errors() = %d, want %d", got, want)
	}

	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"100.0 *", // direct: the upstream's CPU, marked
		"sluice/bare c=1: throughput 1.25×, CPU per call 0.60×",
		"sluice c=32: 2 of 12 calls failed, e.g. status 403",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table has no %q:\n%s", want, b.String())
		}
	}
}

// TestReportRounds: with several rounds, each ratio also says what it was
// in each round, so that a difference smaller than one round's distance
// from another is not taken for a change.
func TestReportRounds(t *testing.T) {
	row := func(target string, cpu time.Duration) Row {
		return NewRow(target, 32, &Result{Calls: 1000, Elapsed: time.Second}, "proxy", Sample{CPU: cpu}, Sample{})
	}
	r := Report{Rounds: [][]Row{
		{row("bare-pooled", 100*time.Millisecond), row("sluice", 90*time.Millisecond)},
		{row("bare-pooled", 100*time.Millisecond), row("sluice", 96*time.Millisecond)},
		{row("bare-pooled", 80*time.Millisecond), row("sluice", 76*time.Millisecond)},
	}}
	r.Rows = []Row{row("bare-pooled", 280*time.Millisecond), row("sluice", 262*time.Millisecond)}
	r.AddRatios("sluice", "bare-pooled")
	if len(r.Ratios) != 1 {
		t.Fatalf("%d ratios, want 1", len(r.Ratios))
	}
	q := r.Ratios[0]
	want := []float64{0.90, 0.96, 0.95}
	if len(q.CPURounds) != len(want) {
		t.Fatalf("CPU by round = %v, want %v", q.CPURounds, want)
	}
	for i := range want {
		if d := q.CPURounds[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Errorf("CPU in round %d = %v, want %v", i+1, q.CPURounds[i], want[i])
		}
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "sluice/bare-pooled c=32: throughput 1.00×, CPU per call 0.94× (3 rounds: 0.90× to 0.96×, median 0.95×)"; !strings.Contains(b.String(), want) {
		t.Errorf("table has no %q:\n%s", want, b.String())
	}

	// One round: nothing more to say than the total.
	r = Report{Rows: r.Rows}
	r.AddRatios("sluice", "bare-pooled")
	if q := r.Ratios[0]; q.CPURounds != nil {
		t.Errorf("one round: CPU by round = %v, want none", q.CPURounds)
	}
}

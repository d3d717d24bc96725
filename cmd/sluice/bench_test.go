package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/bench"
)

// TestMain lets the test binary stand in for the sluice binary when the
// benchmark re-executes itself (os.Executable) to start its children, and
// for the scripted stdio server `sluice wrap` runs (wraprelay_test.go).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		if err := runBench(context.Background(), os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == scriptedServerArg {
		os.Exit(scriptedServer(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestBenchEndToEnd runs a very short benchmark against real children and
// checks that every call succeeded and that no child outlives it.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--duration", "200ms", "--warmup", "50ms", "--concurrency", "1,4", "--json"}
	if err := benchTo(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, &stderr)
	}
	var report bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, &stdout)
	}
	if got, want := len(report.Rows), len(benchTargets)*2; got != want {
		t.Errorf("%d rows, want %d", got, want)
	}
	for _, row := range report.Rows {
		if row.Calls == 0 || row.Errors != 0 {
			t.Errorf("%s c=%d: %d calls, %d errors (%s); want some calls and no errors",
				row.Target, row.Concurrency, row.Calls, row.Errors, row.FirstError)
		}
		if row.RSSMiB <= 0 {
			t.Errorf("%s c=%d: RSS %v MiB, want > 0", row.Target, row.Concurrency, row.RSSMiB)
		}
	}
	if got, want := len(report.Ratios), 10; got != want {
		t.Errorf("%d ratios, want %d (sluice over bare, bare-pooled and sluice-noaudit, sluice-core over bare and bare-pooled, at two levels)", got, want)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children still running after the benchmark: %v", kids)
	}
}

// children lists the processes whose parent is this one.
func children(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone already
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			kids = append(kids, pid)
		}
	}
	return kids
}

func TestParseBenchFlags(t *testing.T) {
	if got, err := parseConcurrency("1, 32"); err != nil || len(got) != 2 || got[0] != 1 || got[1] != 32 {
		t.Errorf("parseConcurrency(\"1, 32\") = %v, %v; want [1 32], nil", got, err)
	}
	for _, bad := range []string{"", "0", "x", "1,,2"} {
		if _, err := parseConcurrency(bad); err == nil {
			t.Errorf("parseConcurrency(%q): got no error, want one", bad)
		}
	}
	if got, err := parseTargets("sluice,bare"); err != nil || len(got) != 2 {
		t.Errorf("parseTargets(\"sluice,bare\") = %v, %v; want [sluice bare], nil", got, err)
	}
	if _, err := parseTargets("nginx"); err == nil {
		t.Error("parseTargets(\"nginx\"): got no error, want one")
	}
}

// TestBenchHelpNamesEveryTarget: `sluice bench --help` names every target
// --targets takes, the ones run only when named (the README's a2a-* and
// sluice-2x) as well as the default ones.
func TestBenchHelpNamesEveryTarget(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), []string{"bench", "--help"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("got exit %d (stderr %q), want 0", rc, &stderr)
	}
	for _, target := range slices.Concat(benchTargets, a2aBenchTargets, replicaBenchTargets) {
		if !strings.Contains(stdout.String(), target) {
			t.Errorf("got help %q, want it to name target %q", &stdout, target)
		}
	}
}

// TestBenchA2A runs the A2A targets briefly: every SendMessage through the
// gateway reaches the agent and completes.
func TestBenchA2A(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--duration", "200ms", "--warmup", "50ms", "--concurrency", "2", "--json", "--targets", strings.Join(a2aBenchTargets, ",")}
	if err := benchTo(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, &stderr)
	}
	var report bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, &stdout)
	}
	if len(report.Rows) != 3 || len(report.Ratios) != 1 {
		t.Fatalf("%d rows, %d ratios; want 3 and 1 (a2a-sluice over a2a-bare-pooled)", len(report.Rows), len(report.Ratios))
	}
	for _, row := range report.Rows {
		if row.Calls == 0 || row.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors (%s)", row.Target, row.Calls, row.Errors, row.FirstError)
		}
	}
}

// TestBenchSessions opens idle sessions through a real Sluice child,
// reports what they cost, and sees them end with session_idle_timeout.
func TestBenchSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	var stdout, stderr bytes.Buffer
	if err := benchTo(t.Context(), []string{"--sessions", "300", "--session-idle-timeout", "1s", "--sluice-log", "warn"}, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, &stderr)
	}
	for _, want := range []string{"300 idle 2025-era sessions opened", "bytes per session (100,000 sessions: ", "the first session answers 404"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, &stdout)
		}
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children still running after the benchmark: %v", kids)
	}
}

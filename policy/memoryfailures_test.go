package policy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestRouteMemoryFailuresLogged: while route memory cannot be read, every
// call a route rule governs is denied with policy_error, and the operator
// is told why: one ERROR line naming the rule and the store's error, then
// at most one every 10 s with how many failed since. Before, a read that
// failed wrote nothing to the log (only the agent's deny said
// policy_error), and a write that failed wrote a line per call.
func TestRouteMemoryFailuresLogged(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p, err := Compile([]byte(routePolicy), "p.yaml", Options{Store: failingStore{err: errors.New("redis at 10.0.0.5:6379: i/o timeout")},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	lines := func(msg string) []string {
		var out []string
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, msg) {
				out = append(out, l)
			}
		}
		return out
	}
	const read = "cannot read route memory"
	for range 5 {
		if got := intercept.Decide(context.Background(), p, call("web_search")); got.Reason != intercept.ReasonPolicyError {
			t.Fatalf("a sink with route memory unreadable: got %s/%s, want deny/policy_error", got.Verdict, got.Reason)
		}
	}
	if l := lines(read); len(l) != 1 || !strings.Contains(l[0], "level=ERROR") || !strings.Contains(l[0], "rule=no-exfil") ||
		!strings.Contains(l[0], "redis at 10.0.0.5:6379: i/o timeout") || !strings.Contains(l[0], "failures=1") {
		t.Fatalf("5 reads failed within 10s: log lines %q, want one ERROR line naming the rule and the error", l)
	}
	// explain reads route memory too, and logs nothing of it.
	p.Explain(context.Background(), call("web_search"))

	now = now.Add(10 * time.Second)
	intercept.Decide(context.Background(), p, call("web_search"))
	if l := lines(read); len(l) != 2 || !strings.Contains(l[1], "failures=5") {
		t.Errorf("a failure 10s later: log lines %q, want a second line counting the 5 since the first", l)
	}

	// Writes have a bound of their own: a source that cannot be
	// remembered is denied each time, logged once, though a read's line
	// was just written.
	intercept.Decide(context.Background(), p, call("web_search"))
	for range 3 {
		if err := p.Forwarded(context.Background(), call("read_document"), intercept.Decision{Verdict: intercept.Allow}); err == nil {
			t.Fatal("Forwarded with route memory unwritable: no error")
		}
	}
	if l := lines("cannot write route memory"); len(l) != 1 {
		t.Errorf("3 writes failed within 10s: log lines %q, want one", l)
	}
}

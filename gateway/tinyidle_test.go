package gateway

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestTinySessionIdleTimeout: a session_idle_timeout of 1ns (a typo for
// 1s, which config loading takes) made the reapers' tick half of it,
// zero, and time.NewTicker panicked on the reaper's goroutine: sluice
// serve died as it started. The reapers tick at least every millisecond.
func TestTinySessionIdleTimeout(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "x", Command: "true"}}, SessionIdleTimeout: time.Nanosecond},
		&intercept.Interceptor{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// The reapers make their tickers (without the fix, panic) on
	// goroutines of their own, which Close waits for.
	g.Close()
}

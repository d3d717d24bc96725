package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// behindLog sums the count of the gateway's "too far behind" log lines.
type behindLog struct {
	mu  sync.Mutex
	sum int64
}

func (h *behindLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *behindLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *behindLog) WithGroup(string) slog.Handler            { return h }
func (h *behindLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "too far behind") {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "count" {
			h.mu.Lock()
			h.sum += a.Value.Int64()
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *behindLog) total() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sum
}

// TestVirtualListenBehindLogged (review): the log of a subscription's
// missed notifications says how many were missed, as the count does. It is
// rate-limited (a line per unreadableLogEvery with the count since the
// last): the first miss was logged and the rest of a burst, within the
// interval, never, since nothing logged what was left when the
// subscription ended.
func TestVirtualListenBehindLogged(t *testing.T) {
	up := floodingListen(5_000)
	counts := &withheldCounts{}
	logged := &behindLog{}
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}, Metrics: counts, VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"u"}}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(logged))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = up
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	conn := listenUnread(t, srv.URL+"/mcp/v")
	for deadline := time.Now().Add(20 * time.Second); counts.get("behind") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a client reading nothing of 5,000 changes: fewer than 2 counted as missed")
		}
	}
	conn.Close() // the subscription ends with its client
	var missed, said int64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		missed, said = int64(counts.get("behind")), logged.total()
		if said == missed || time.Now().After(deadline) {
			break
		}
	}
	if said != missed {
		t.Errorf("after the subscription ended: %d notifications counted as missed, the log said %d", missed, said)
	}
}

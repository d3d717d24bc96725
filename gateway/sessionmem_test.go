package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/sluicehq/sluice/intercept"
)

// leanUpstream is the least an HTTP MCP server does for a session:
// answers initialize with a session id, accepts notifications, keeps
// nothing. Memory measured with it is the gateway's own.
func leanUpstream() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(string(b), `"initialize"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("up-%d", n.Add(1)))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"lean","version":"1"}}}`)
	})
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse // a goroutine per session would show in its stack
}

// TestIdleSessionMemory measures what an idle 2025-era session costs the
// gateway (issue 13: 100,000 in at most 1 GiB, so about 10 KiB each) and
// that idle sessions are reclaimed after session_idle_timeout.
func TestIdleSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of sessions")
	}
	up := httptest.NewServer(leanUpstream())
	defer up.Close()
	const n = 3000
	// The sessions' clock stands still while they are opened (under a
	// loaded CI machine that takes longer than the idle timeout) and
	// jumps past the timeout once they are measured.
	var frozen atomic.Int64 // unix nanos while the clock stands, 0 after
	frozen.Store(time.Now().UnixNano())
	g, err := New(Options{
		now: func() time.Time {
			if f := frozen.Load(); f != 0 {
				return time.Unix(0, f)
			}
			return time.Now().Add(10 * time.Second)
		},
		Upstreams:           []Upstream{{Name: "lean", URL: up.URL}},
		MaxSessions:         n * 2,
		MaxSessionsPerAgent: n * 2, MaxSessionsPerClient: n * 2,
		SessionIdleTimeout: 5 * time.Second,
	}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	open := func(i int) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/lean", strings.NewReader(
			fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent-%d","version":"1"}}}`, i%50)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize %d: %d", i, resp.StatusCode)
		}
	}
	open(-1) // warm up pools and lazily built state
	before := heapInUse()
	for i := range n {
		open(i)
	}
	after := heapInUse()
	if got := g.sessions.len(); got != n+1 {
		t.Fatalf("%d sessions open when measured, want %d (some ended before the measurement)", got, n+1)
	}
	per := float64(after-before) / n
	t.Logf("idle 2025-era session: %.0f bytes of gateway heap and stacks each (%d sessions); 100,000 would take %.0f MiB", per, n, per*100_000/(1<<20))
	if per > 10<<10 {
		t.Errorf("an idle session costs %.0f bytes; 100,000 of them would not fit in 1 GiB", per)
	}
	frozen.Store(0)
	// Weak pointers to every session: after the idle timeout none may be
	// left reachable.
	var weaks []weak.Pointer[session]
	g.sessions.mu.Lock()
	for _, sess := range g.sessions.m {
		weaks = append(weaks, weak.Make(sess))
	}
	g.sessions.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for g.sessions.len() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := g.sessions.len(); left > 0 {
		t.Fatalf("%d sessions left after the idle timeout", left)
	}
	// The upstream sessions' DELETEs are paced: wait for the last.
	pending := func() int {
		g.ends.mu.Lock()
		defer g.ends.mu.Unlock()
		return len(g.ends.queue) + g.ends.workers
	}
	for pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	client.CloseIdleConnections()
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, w := range weaks {
		if w.Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d sessions still reachable after the idle timeout", alive, len(weaks))
	}
}

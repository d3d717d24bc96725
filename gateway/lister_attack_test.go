package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
)

// TestAttackListingCancelledForOthers: the gateway lists an upstream's
// tools for a client that calls before listing, one listing at a time,
// and a caller that waited on a listing took its outcome. The listing ran
// under the context of the call that started it: mallory called, and
// dropped her request while the listing was under way; alice, who had
// called meanwhile, took "context canceled" as the outcome of the listing
// and her call was refused (tools_not_listed), though the upstream lists
// fine. Alice's call must go through.
func TestAttackListingCancelledForOthers(t *testing.T) {
	r := &rug{dir: t.TempDir()}
	listing := make(chan struct{}) // the first tools/list has arrived
	release := make(chan struct{}) // the first tools/list may be answered
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			if strings.Contains(string(body), `"tools/list"`) {
				first := false
				once.Do(func() { first = true })
				if first {
					close(listing)
					select {
					case <-release:
					case <-req.Context().Done():
						return
					}
				}
			}
			req.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		r.handler().ServeHTTP(w, req)
	}))
	t.Cleanup(up.Close)
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &govern.DriftGate{Next: &intercept.StaticDecider{Default: intercept.Allow}, Inventory: inv}, Observer: inv}
	g, err := New(Options{Upstreams: []Upstream{{Name: "http", URL: up.URL}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/http"

	// Mallory calls without listing, and drops the request once the
	// gateway's listing is under way.
	ctx, cancel := context.WithCancel(t.Context())
	malloryDone := make(chan struct{})
	go func() {
		defer close(malloryDone)
		body := modernCall(1, "fetch", `{"url":"https://example.com/"}`)
		body = strings.Replace(body, `"name":"test"`, `"name":"mallory"`, 1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "fetch") {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-listing:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not list the upstream's tools for mallory's call")
	}
	// Alice calls meanwhile; her call waits on the listing under way.
	aliceGot := make(chan string, 1)
	go func() { aliceGot <- statelessAs(t, url, "alice", "tools/call", "fetch", fetchCall) }()
	time.Sleep(300 * time.Millisecond) // alice's call reaches the listing's turn (no hook to wait on)
	cancel()
	<-malloryDone
	time.Sleep(100 * time.Millisecond) // the cancelled listing ends
	close(release)
	got := <-aliceGot
	if !strings.Contains(got, "fetched") {
		t.Errorf("alice's call: got %.300s, want it forwarded (mallory's dropped request must not fail alice's listing)", got)
	}
}

// TestAttackListingChildrenPileUp: every 2026-07-28 request of a client
// that has not listed has the gateway list the upstream's tools, and on a
// stdio upstream each listing is a process of its own, outside
// max_children, stopped after the listing without the call waiting on it.
// A server slow to exit once its stdin ends lives on for the stop's grace
// period: mallory, calling under a fresh client name each time, had a new
// child started for each call while the ones before still ran. One
// listing's child at a time may run.
func TestAttackListingChildrenPileUp(t *testing.T) {
	gw, _, r := rugGateway(t)
	if err := os.WriteFile(filepath.Join(r.dir, "linger"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url := gw.URL + "/mcp/stdio"
	const calls = 3
	for i := range calls {
		if got := statelessAs(t, url, "mallory-"+strconv.Itoa(i), "tools/call", "fetch", fetchCall); !strings.Contains(got, "fetched") {
			t.Fatalf("call %d: %.300s", i, got)
		}
	}
	pids, _ := filepath.Glob(filepath.Join(r.dir, "pid-*"))
	alive := 0
	for _, f := range pids {
		pid, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "pid-"))
		if syscall.Kill(pid, 0) == nil {
			alive++
		}
	}
	// The shared 2026-07-28 connection's child, and the last listing's.
	if alive > 2 {
		t.Errorf("%d of %d children still run after %d calls, want at most 2 (the shared connection's and one listing's)", alive, len(pids), calls)
	}
}

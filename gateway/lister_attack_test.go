package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	t.Cleanup(func() { gw.Close(); g.Close() })
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

package gateway

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackOneClientHoldsBodyBudget (found by an attacker review): the
// request bodies held at once are bounded by max_inflight_body_bytes, all
// clients together, and a body is held until its answer. One client
// sending a few large calls to a tool that takes its time held the whole
// budget, and every other client's request, however small, waited 2 s and
// got 503 for as long as it kept doing so. A client (its principal, else
// its address) now holds at most half of the budget.
func TestAttackOneClientHoldsBodyBudget(t *testing.T) {
	const limit, budget = 1 << 20, 4 << 20
	f := newFixture(t, &intercept.StaticDecider{Default: intercept.Allow}, Options{MaxBodyBytes: limit, MaxInflightBodyBytes: budget, TrustedProxies: loopbackProxy})
	url := f.gw.URL + "/mcp/demo"
	pad := strings.Repeat("P", limit-1<<10)
	var wg sync.WaitGroup
	defer wg.Wait()
	mallory := proxied("192.0.2.1")
	for i := range 4 {
		wg.Go(func() {
			body := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":2,"delay_ms":2000},"_meta":{"pad":"` + pad + `",` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mallory","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "slow_count") {
				req.Header.Set(k, v)
			}
			if resp, err := mallory.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // mallory's calls are under way
	alice := proxied("192.0.2.2")
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(modernCall(9, "echo", `{"message":"`+strings.Repeat("h", 200<<10)+`"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/call", "echo") {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := alice.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("another client's small call while one client's large calls wait: HTTP %d after %v, want 200", resp.StatusCode, time.Since(start).Round(time.Millisecond))
	}
}

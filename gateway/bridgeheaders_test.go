package gateway

import (
	"bufio"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestBridgedStreamHeadersEarly: an answer from a stdio upstream was
// started only with the upstream's first message, so a request the
// server answers late, and says nothing meanwhile (a 2026-07-28
// subscriptions/listen, a slow tool without progress), got no response
// headers until then; a client that waits for them (go-sdk's Connect
// waits on its subscriptions/listen) hung, where the same server over
// HTTP sends its stream's headers at once (review transp65). A client
// that takes an event stream now gets the stream's headers within
// bridgeStreamAfter of nothing to say, and the answer on it.
func TestBridgedStreamHeadersEarly(t *testing.T) {
	bin := buildDemoServer(t)
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", Command: bin, Args: []string{"-transport", "stdio"}}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	body := modernCall(1, "slow_count", `{"n":1,"delay_ms":4000}`)
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/demo", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/call", "slow_count") {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("response headers of a call the stdio server answers after 4s: after %v, want them within %v", took.Round(time.Millisecond), bridgeStreamAfter)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an event stream", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), `"result"`) {
			return
		}
	}
	t.Errorf("the stream ended without the call's result (%v)", sc.Err())
}

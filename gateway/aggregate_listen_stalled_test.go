package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

func startScriptedGateways(t *testing.T, ups map[string]*scriptUpstream, o Options) (*Gateway, string) {
	t.Helper()
	for n := range ups {
		o.Upstreams = append(o.Upstreams, Upstream{Name: n, Command: "true"})
	}
	g, err := New(o, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for n, up := range ups {
		g.routes[n].dialer = up
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	return g, srv.URL
}

func listenGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*aggregator).listenTo")
}

// TestVirtualListenStalledUpstream: a virtual server's subscription whose
// upstream never acknowledges (nor ends it) is acknowledged with what the
// others acknowledged once the list timeout passes, their notifications
// follow, and when the client goes every subscription it held on the
// upstreams ends with it: no goroutine waits on the stalled one.
func TestVirtualListenStalledUpstream(t *testing.T) {
	stalled := &scriptUpstream{handle: func(msg []byte) [][]byte { return nil }}
	g, base := startScriptedGateways(t, map[string]*scriptUpstream{"a": listeningUpstream(), "b": stalled},
		Options{VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"a", "b"}}}})
	for _, a := range g.virtual {
		a.listTimeout = 300 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	c, stop := context.WithCancel(ctx)
	resp, err := sendPost(c, base+"/mcp/v", modernHeaders("subscriptions/listen", ""), modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`))
	if err != nil {
		t.Fatal(err)
	}
	ev := readEvents(resp, 2)
	if len(ev) != 2 || !strings.Contains(ev[0], `"notifications/subscriptions/acknowledged"`) || !strings.Contains(ev[0], `"toolsListChanged":true`) ||
		!strings.Contains(ev[1], `"notifications/tools/list_changed"`) {
		t.Errorf("the stream: %q, want the acknowledgement of what a acknowledged, then its list change", ev)
	}
	stop()
	resp.Body.Close()
	for i := 0; listenGoroutines() > 0; i++ {
		if i == 400 {
			t.Fatalf("after the client left: %d subscriptions on upstreams still open", listenGoroutines())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

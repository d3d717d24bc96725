package e2e

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// roundRobin is the least a load balancer does: each request to the next
// backend, no affinity, streams passed through as they come.
func roundRobin(t *testing.T, backends []string) string {
	t.Helper()
	var proxies []*httputil.ReverseProxy
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1
		proxies = append(proxies, p)
	}
	var n atomic.Uint64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[(n.Add(1)-1)%uint64(len(proxies))].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	return lb.URL
}

// TestEverythingAcrossReplicas runs the TS SDK client's full transcript
// (tools, progress, sampling, elicitation, resources, prompts) against
// server-everything through three gateways that share only their session
// key, behind a round-robin balancer: every request of the session may land
// on another replica, and the transcript equals the direct one.
func TestEverythingAcrossReplicas(t *testing.T) {
	requireNode(t)
	httpURL := startServer(t, "streamableHttp")
	key := bytes.Repeat([]byte{7}, 32)
	var gws []string
	for range 3 {
		g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{Name: "http", URL: httpURL}}, SessionKeys: [][]byte{key}},
			&intercept.Interceptor{Decider: allowAll}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(func() { srv.Close(); g.Close() })
		gws = append(gws, srv.URL)
	}
	lb := roundRobin(t, gws)
	want := runClient(t, "--transport", "streamable-http", "--url", httpURL)
	if want["ok"] != true {
		t.Fatalf("direct run failed: %v", want)
	}
	got := runClient(t, "--transport", "streamable-http", "--url", lb+"/mcp/http")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("across replicas differs from direct (-direct +replicas):\n%s", diff)
	}
}

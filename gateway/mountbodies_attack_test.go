package gateway

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackMountedBodiesUnbounded: request bodies sent to what is
// mounted beside the MCP routes (the A2A gateway at /a2a/: its JSON-RPC
// and REST requests, agents' pushes to the push relay) were outside the
// bodies' budget and pace that bound /mcp, /sse and /ws: a client could
// open any number of 4 MiB POSTs and trickle their bodies, holding a
// goroutine and the bytes sent so far each, with no bound on them all.
// They are now held in the same budget (max_inflight_body_bytes, half of
// it for one client) and paced the same way.
func TestAttackMountedBodiesUnbounded(t *testing.T) {
	const limit = 64 << 10
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d bytes", len(b))
	})
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: "http://127.0.0.1:1/mcp"}}, MaxBodyBytes: limit, MaxInflightBodyBytes: limit,
		Mount: map[string]http.Handler{"/a2a/": mounted}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	host := strings.TrimPrefix(gw.URL, "http://")
	// post sends a POST's head announcing n bytes of body, and send of
	// them.
	post := func(n, send int) *bufio.Reader {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /a2a/agent HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, n, strings.Repeat(" ", send))
		c.SetReadDeadline(time.Now().Add(6 * time.Second))
		return bufio.NewReader(c)
	}
	post(limit-1<<10, 0) // held, its body never sent
	time.Sleep(200 * time.Millisecond)
	resp, err := http.ReadResponse(post(limit-1<<10, limit-1<<10), nil)
	if err != nil {
		t.Fatalf("a second large body from a client already holding one: no answer (%v); want 503 once no room is freed within 2s", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a second large body from a client already holding one: HTTP %d, want 503", resp.StatusCode)
	}
	// Within the budget, a mounted handler reads its body as before.
	r, err := http.Post(gw.URL+"/a2a/agent", "application/json", strings.NewReader(`{"jsonrpc":"2.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || string(b) != "read 17 bytes" {
		t.Errorf("a small body: HTTP %d %q, want it read whole", r.StatusCode, b)
	}
}

package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// stacksContaining reports how many goroutines have fn on their stack.
func stacksContaining(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// TestClientDisconnectMidStream checks that a client that goes away while a
// streamed call is running leaves no gateway goroutine behind, for a relayed
// HTTP upstream and a bridged stdio one.
func TestClientDisconnectMidStream(t *testing.T) {
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}})
	for _, route := range []string{"demo", "stdio"} {
		t.Run(route, func(t *testing.T) {
			url := f.gw.URL + "/mcp/" + route
			sid := initialize(t, url)
			resp, cancel := startSlowCount(t, url, sid, 5, 1000, 20)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("content type %q, want an SSE stream", ct)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line == "" {
				t.Fatalf("reading the first event: %v", err)
			}
			if n := stacksContaining("gateway.(*Gateway).post"); n == 0 {
				t.Fatalf("no gateway goroutine is serving the stream; the check below would prove nothing")
			}
			cancel()
			resp.Body.Close()
			deadline := time.Now().Add(5 * time.Second)
			for stacksContaining("gateway.(*Gateway).post") > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("a gateway goroutine is still serving the stream 5s after the client left")
				}
				runtime.Gosched()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// startSlowCount starts slow_count (n steps, delay ms apart, with progress)
// in a 2025-11-25 session and returns the streaming response; cancel
// breaks it off.
func startSlowCount(t *testing.T, url, sid string, id, n, delay int) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":%d,"delay_ms":%d},"_meta":{"progressToken":"p%d"}}}`, id, n, delay, id)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return resp, cancel
}

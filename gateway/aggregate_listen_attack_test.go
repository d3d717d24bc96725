package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/sluicehq/sluice/telemetry"
)

// listeningUpstream answers a 2026-07-28 subscriptions/listen with its
// acknowledgement and a tools/list_changed, and keeps the subscription
// open (no result).
func listeningUpstream() *scriptUpstream { return listenScript(false) }

// listenScript answers a 2026-07-28 subscriptions/listen with its
// acknowledgement (of toolsListChanged) and a tools/list_changed, both
// named by the listen's id, and with end its result.
func listenScript(end bool) *scriptUpstream {
	return &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method != "subscriptions/listen" {
			return nil
		}
		meta := `{"io.modelcontextprotocol/subscriptionId":` + string(r.ID) + `}`
		out := [][]byte{
			[]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":` + meta + `,"notifications":{"toolsListChanged":true}}}`),
			[]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":` + meta + `}}`),
		}
		if end {
			out = append(out, []byte(`{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":{"resultType":"complete","_meta":`+meta+`}}`))
		}
		return out
	}}
}

// TestVirtualListen: a virtual server serves 2026-07-28
// subscriptions/listen: the client's stream gets the acknowledgement of
// what its upstreams acknowledged first, then their list changes, named
// by the client's request id; kinds it did not ask for, or no upstream
// acknowledged, never come. Before, it answered "does not offer", and a
// 2026-07-28 client of a virtual server never heard of a list change
// (TestTSv2VirtualServer runs the TypeScript SDK v2 client through it).
func TestVirtualListen(t *testing.T) {
	_, base := startScriptedGateway(t, listeningUpstream(), Options{VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"u"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	body := strings.Replace(modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true,"promptsListChanged":true},`), `"id":1`, `"id":"mine"`, 1)
	resp, err := sendPost(ctx, base+"/mcp/v", modernHeaders("subscriptions/listen", ""), body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(resp, 2)
	if len(events) < 2 {
		t.Fatalf("the listen's stream: %q, want the acknowledgement and a list change", events)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mine"},"notifications":{"toolsListChanged":true}}}`; events[0] != want {
		t.Errorf("first event: %s\nwant %s (prompts not acknowledged by the upstream)", events[0], want)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mine"}}}`; events[1] != want {
		t.Errorf("second event: %s\nwant %s", events[1], want)
	}
}

// TestAttackVirtualListenFlood: a subscription on a virtual server holds
// one open on each of its upstreams for as long as the client keeps it,
// at no cost to the client but a connection: a client opening them
// without end held every upstream's. Each holds a place in the session
// limits, as a session does (here max_sessions_per_client: 3), and the
// place is free again when the client goes.
func TestAttackVirtualListenFlood(t *testing.T) {
	_, base := startScriptedGateway(t, listeningUpstream(), Options{MaxSessionsPerClient: 3, VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"u"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	body := modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`)
	open := func() (*http.Response, context.CancelFunc) {
		t.Helper()
		c, stop := context.WithCancel(ctx)
		resp, err := sendPost(c, base+"/mcp/v", modernHeaders("subscriptions/listen", ""), body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, stop
	}
	var stops []context.CancelFunc
	for i := range 3 {
		resp, stop := open()
		stops = append(stops, stop)
		if got := readEvents(resp, 1); resp.StatusCode != http.StatusOK || len(got) == 0 || !strings.Contains(got[0], "acknowledged") {
			t.Fatalf("subscription %d: %d %q, want it acknowledged", i+1, resp.StatusCode, got)
		}
	}
	resp, stop := open()
	resp.Body.Close()
	stop()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 4th subscription from the address: HTTP %d, want 429 (max_sessions_per_client)", resp.StatusCode)
	}
	stops[0]() // the client goes: its place is free
	for i := 0; ; i++ {
		resp, stop := open()
		ok := resp.StatusCode == http.StatusOK
		resp.Body.Close()
		stop()
		if ok {
			break
		}
		if i == 100 {
			t.Fatal("a subscription after one ended: still refused")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range stops {
		s()
	}
}

// readEvents reads the data of up to n SSE events of resp.
func readEvents(resp *http.Response, n int) []string {
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestAttackRouteListenFlood: as TestAttackVirtualListenFlood, on a
// route: each 2026-07-28 subscription held an upstream's open for as long
// as the client kept it, and took no place in the session limits (left
// open by review101). A virtual server's subscription holds one place
// for all its upstreams' (TestAttackVirtualListenFlood passes with 3).
func TestAttackRouteListenFlood(t *testing.T) {
	_, base := startScriptedGateway(t, listeningUpstream(), Options{MaxSessionsPerClient: 3})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	body := modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`)
	var codes []int
	for range 4 {
		c, stop := context.WithCancel(ctx)
		defer stop()
		resp, err := sendPost(c, base+"/mcp/u", modernHeaders("subscriptions/listen", ""), body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			readEvents(resp, 1) // acknowledged: open
		}
		codes = append(codes, resp.StatusCode)
	}
	if want := []int{200, 200, 200, 429}; !slices.Equal(codes, want) {
		t.Errorf("four subscriptions from one address with max_sessions_per_client 3: HTTP %v, want %v", codes, want)
	}
}

// TestVirtualListenEndsAfterItsNotifications: an upstream that sends a
// change and ends its subscription at once has the change reach the
// client before the subscription's result, not lost to the end (left
// open by review101: the end could be taken before what came first).
func TestVirtualListenEndsAfterItsNotifications(t *testing.T) {
	up := listenScript(true)
	_, base := startScriptedGateway(t, up, Options{VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"u"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		resp, err := sendPost(ctx, base+"/mcp/v", modernHeaders("subscriptions/listen", ""), modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`))
		if err != nil {
			t.Fatal(err)
		}
		events := readEvents(resp, 3)
		resp.Body.Close()
		if len(events) != 3 || !strings.Contains(events[1], "tools/list_changed") || !strings.Contains(events[2], `"resultType":"complete"`) {
			t.Fatalf("subscription %d: %q, want the acknowledgement, the change, then the result", i, events)
		}
	}
}

// withheldCounts counts MessageWithheld by reason, and records nothing
// else.
type withheldCounts struct {
	telemetry.NopTelemetry
	mu sync.Mutex
	n  map[string]int
}

func (w *withheldCounts) MessageWithheld(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[reason]++
}

func (w *withheldCounts) get(reason string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[reason]
}

// TestVirtualListenBehindCounted: a subscription's client that does not
// read misses the notifications past those waiting for it; each missed
// one is counted (sluice_messages_withheld_total{reason="behind"}), not
// dropped unsaid.
func TestVirtualListenBehindCounted(t *testing.T) {
	up := floodingListen(20_000)
	counts := &withheldCounts{}
	_, base := startScriptedGateway(t, up, Options{Metrics: counts, VirtualServers: []VirtualServer{{Name: "v", Upstreams: []string{"u"}}}})
	listenUnread(t, base+"/mcp/v")
	for deadline := time.Now().Add(20 * time.Second); counts.get("behind") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a client reading nothing of 20,000 changes (20 MB): none counted as missed")
		}
	}
}

// floodingListen answers a 2026-07-28 subscriptions/listen with its
// acknowledgement and n tools/list_changed of 1 KB each, and keeps it
// open.
func floodingListen(n int) *scriptUpstream {
	return &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method != "subscriptions/listen" {
			return nil
		}
		meta := `{"io.modelcontextprotocol/subscriptionId":` + string(r.ID) + `}`
		out := [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":` + meta + `,"notifications":{"toolsListChanged":true}}}`)}
		change := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":` + meta + `,"pad":"` + strings.Repeat("x", 1000) + `"}}`)
		for range n {
			out = append(out, change)
		}
		return out
	}}
}

// listenUnread opens a subscription (tools list changes) at url, an
// http:// URL, on a connection with a small receive buffer, never to read
// its answer, and returns the connection.
func listenUnread(t *testing.T, url string) net.Conn {
	t.Helper()
	hostPath := strings.TrimPrefix(url, "http://")
	addr, path, _ := strings.Cut(hostPath, "/")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`)
	fmt.Fprintf(conn, "POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
	return conn
}

package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackUnreadConnKeepsSession is TestAttackUnreadStreamKeepsSession
// on the connections that are sessions themselves: /ws (a route and a
// virtual server) and the legacy /sse stream. A /ws connection is
// hijacked, outside the HTTP writer that bounds a stalled write, and the
// keepalive that would end a silent peer is kept going by the peer
// itself: a client that sends a pong (or any frame) now and then, and
// never reads, had the write of its call's streamed answer blocked for
// ever, and its session, its upstream session and the upstream's stream
// with it. A write that makes no progress for write_stall_timeout now
// ends the connection and its session, on every kind; and a 2026-07-28
// POST's, the upstream's stream it holds.
func TestAttackUnreadConnKeepsSession(t *testing.T) {
	const stall = 300 * time.Millisecond
	// serve is a gateway in front of an upstream whose answer to a call
	// for "flood" streams without end: ended hears of the gateway's
	// sessions' ends, flooding of a flood started, released of one whose
	// writer gave up (its reader went away). Each kind gets its own, so
	// that nothing is taken for another's.
	type served struct {
		url                string
		ended              chan string
		flooding, released chan struct{}
	}
	serve := func(t *testing.T) served {
		ended := make(chan string, 8)
		flooding := make(chan struct{}, 8)
		released := make(chan struct{}, 8) // a flood's writer gave up: its reader went away
		up := httptest.NewServer(demoUnless(`"flood"`, func(w http.ResponseWriter, r *http.Request) {
			// The call's answer streams: log messages of 64 KiB, up to
			// 256 MiB, far past what the sockets between hold.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			tell(t, flooding, struct{}{})
			note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 64<<10) + `"}}`
			for range 4096 {
				if _, err := fmt.Fprintf(w, "data: %s\n\n", note); err != nil {
					tell(t, released, struct{}{})
					return
				}
			}
		}))
		t.Cleanup(up.Close)
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, VirtualServers: []VirtualServer{{Naming: NamingPrefix}},
			WriteStallTimeout: stall, OnSessionEnd: func(id string) { tell(t, ended, id) }},
			&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		return served{gw.URL, ended, flooding, released}
	}
	// smallReads dials with a small receive buffer, so that an unread
	// answer fills the sockets between soon.
	smallReads := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
		}
		return c, err
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	flood := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"message":"flood"}}}`
	}
	waitEnded := func(t *testing.T, kind string, sv served) {
		t.Helper()
		select {
		case <-sv.flooding:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream was never asked for the flood")
		}
		select {
		case <-sv.ended:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: session still open 10s after its client stopped reading its call's streamed answer; want it ended once a write stalled %v", kind, stall)
		}
	}

	for _, c := range []struct{ path, tool string }{{"/ws/demo", "echo"}, {"/ws", "demo_echo"}} {
		t.Run(c.path, func(t *testing.T) {
			sv := serve(t)
			d := websocket.Dialer{NetDialContext: smallReads}
			ws, _, err := d.DialContext(t.Context(), "ws"+strings.TrimPrefix(sv.url, "http")+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.WriteMessage(websocket.TextMessage, []byte(initialize))
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), "protocolVersion") {
				t.Fatalf("initialize: %v %s", err, b)
			}
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			ws.WriteMessage(websocket.TextMessage, []byte(flood(c.tool)))
			// The client never reads again, but answers for itself the
			// pings it does not read, so the keepalive finds it alive.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						if ws.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second)) != nil {
							return
						}
					}
				}
			}()
			waitEnded(t, c.path, sv)
		})
	}

	t.Run("/sse/demo", func(t *testing.T) {
		sv := serve(t)
		client := &http.Client{Transport: &http.Transport{DialContext: smallReads}}
		t.Cleanup(client.CloseIdleConnections)
		conn := dialWith(t, &transport.SSEDialer{URL: sv.url + "/sse/demo", Client: client})
		if m := exchangeOn(t, conn, initialize, "0"); m.Kind != intercept.KindResponse {
			t.Fatalf("initialize: got %s", m.Raw)
		}
		ctx := t.Context()
		if err := conn.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, []byte(flood("echo"))); err != nil {
			t.Fatal(err)
		}
		// The client never reads the stream again.
		waitEnded(t, "/sse/demo", sv)
	})

	// A 2026-07-28 POST is no session; what its unread answer held is the
	// upstream's stream, released once the write to the client stalls.
	t.Run("2026 POST", func(t *testing.T) {
		sv := serve(t)
		host := strings.TrimPrefix(sv.url, "http://")
		c, err := smallReads(t.Context(), "tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := modernCall(1, "echo", `{"message":"flood"}`)
		fmt.Fprintf(c, "POST /mcp/demo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
		select {
		case <-sv.flooding:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream was never asked for the flood")
		}
		select {
		case <-sv.released:
		case <-time.After(10 * time.Second):
			t.Errorf("the upstream's stream still held 10s after the client stopped reading its answer; want it released once a write stalled %v", stall)
		}
	})
}

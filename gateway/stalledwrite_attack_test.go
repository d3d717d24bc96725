package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackUnreadStreamKeepsSession: a session with a request in flight
// is not idle (TestAttackIdleSessionCallInFlightForgets), and a request
// is done when its handler returns. A client that sent a call whose
// answer streams, then kept its socket open without reading, had the
// handler blocked for ever writing the answer to it: the session never
// went idle, and held its place in the session limits, its upstream
// session and the upstream's stream, for as long as the client liked. A
// write to the client that makes no progress for write_stall_timeout now
// ends the response, and the session is ended once idle. A GET stream
// with nothing to write is not cut for it.
func TestAttackUnreadStreamKeepsSession(t *testing.T) {
	const stall = 300 * time.Millisecond
	flooding := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(demoUnless(`"flood"`, func(w http.ResponseWriter, r *http.Request) {
		// The call's answer streams: log messages of 64 KiB, up to
		// 256 MiB, far past what the sockets between hold.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		once.Do(func() { close(flooding) })
		note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 64<<10) + `"}}`
		for range 4096 {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", note); err != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	// serve is a gateway in front of up whose sessions end idle after
	// idle, and rawRequest sends it a request on a connection of its
	// own, whose client reads only as far as the test says.
	serve := func(t *testing.T, idle time.Duration) (g *Gateway, url string, rawRequest func(method, sid, body string) net.Conn) {
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, SessionIdleTimeout: idle, WriteStallTimeout: stall},
			&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		host := strings.TrimPrefix(gw.URL, "http://")
		return g, gw.URL + "/mcp/demo", func(method, sid, body string) net.Conn {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			fmt.Fprintf(c, "%s /mcp/demo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
				"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
				method, host, sid, len(body), body)
			return c
		}
	}

	t.Run("answer not read", func(t *testing.T) {
		const idle = 500 * time.Millisecond
		g, url, rawRequest := serve(t, idle)
		rawRequest(http.MethodPost, initialize(t, url), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"flood"}}}`)
		<-flooding
		// The client never reads. Its session must end all the same,
		// once the write to it has stalled and the session was idle.
		deadline := time.Now().Add(10 * time.Second)
		for g.sessions.len() > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := g.sessions.len(); n > 0 {
			t.Errorf("sessions 10s after a client stopped reading its call's streamed answer: got %d, want it ended (write stalled %v, idle %v)", n, stall, idle)
		}
	})

	t.Run("GET stream idle", func(t *testing.T) {
		_, url, rawRequest := serve(t, 0)
		c := rawRequest(http.MethodGet, initialize(t, url), "")
		rd := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		status, err := rd.ReadString('\n')
		if err != nil || !strings.Contains(status, "200") {
			t.Fatalf("GET stream: %q %v", status, err)
		}
		// Nothing to write for many times the stall timeout: the stream
		// stays open (the read times out rather than ending).
		c.SetReadDeadline(time.Now().Add(4 * stall))
		_, err = io.Copy(io.Discard, rd)
		if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
			t.Errorf("an idle GET stream after %v: got %v, want it still open", 4*stall, err)
		}
	})
}

// demoUnless is the demo server, but for requests whose body holds
// marker, which special answers instead.
func demoUnless(marker string, special http.HandlerFunc) http.Handler {
	demoH := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(marker)) {
			special(w, r)
			return
		}
		demoH.ServeHTTP(w, r)
	})
}

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

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackSlowReaderCutOff: write_stall_timeout bounds a write that
// makes no progress, not the time a client takes to read an answer. A
// tool's answer (up to max_answer_bytes, 32 MiB by default) is written
// to the client in one write; with the whole write under one deadline,
// an honest client reading it steadily, only more slowly than the
// answer's size over the timeout (a 16 MiB answer over 30s: a link
// under 560 KB/s), had its answer cut short and the connection closed.
// Each part of a long write now has the timeout afresh, so a client
// that reads keeps being written to.
func TestAttackSlowReaderCutOff(t *testing.T) {
	// Long enough that a loaded machine (a CI run under -race beside
	// other work) does not pause a steady reader that long — it cut a
	// /ws answer at 500ms — and short against the answer's seconds.
	const stall = 2 * time.Second
	const size = 24 << 20
	up := httptest.NewServer(demoUnless(`"big"`, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"%s"}]}}`, strings.Repeat("x", size))
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, WriteStallTimeout: stall},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	host := strings.TrimPrefix(gw.URL, "http://")
	sid := initialize(t, gw.URL+"/mcp/demo")

	t.Run("POST", func(t *testing.T) {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"big"}}}`
		fmt.Fprintf(c, "POST /mcp/demo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", host, sid, len(body), body)
		// The client reads on steadily, 128 KiB every 20ms (6.4 MB/s): never
		// a pause near the stall timeout, but the whole answer takes some
		// seconds, many times it.
		start := time.Now()
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4<<10), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		readSteadily(t, resp.Body, start, size)
	})

	// A /ws connection's writes are bounded by the same timeout, in the
	// same parts.
	t.Run("/ws", func(t *testing.T) {
		ws, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), "protocolVersion") {
			t.Fatalf("initialize: %v %s", err, b)
		}
		ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"big"}}}`))
		start := time.Now()
		_, r, err := ws.NextReader()
		if err != nil {
			t.Fatal(err)
		}
		readSteadily(t, r, start, size)
	})
}

// readSteadily reads r to its end as a slow but steady client does,
// 128 KiB every 20ms (6.4 MB/s), and fails t if the answer, started at
// start, is cut or shorter than size.
func readSteadily(t *testing.T, r io.Reader, start time.Time, size int64) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var got int64
	for {
		n, err := io.CopyN(io.Discard, r, 128<<10)
		got += n
		if err != nil {
			if err != io.EOF {
				t.Fatalf("a client reading steadily: answer cut after %d bytes (%v) in %v, want it whole", got, err, time.Since(start))
			}
			break
		}
		<-tick.C
	}
	if got < size {
		t.Errorf("answer read: got %d bytes, want more than %d", got, size)
	}
}

package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A server may ping the client while it works on initialize (the MCP
// lifecycle allows pings before initialized) and, on a response stream,
// answer initialize only once the pong is back. The session id is in the
// stream's headers already, so the pong can carry it; but Write now holds
// every message until the initialize *result* is observed, so the pong
// waits for initialize, which waits for the pong: deadlock.
func TestStreamableHTTPPingDuringInitialize(t *testing.T) {
	pong := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"initialize"`)):
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-ping\",\"method\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-pong:
			case <-time.After(5 * time.Second):
				return // no pong: the stream ends without the answer
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n\n")
			w.(http.Flusher).Flush()
		case bytes.Contains(body, []byte(`"srv-ping"`)):
			if r.Header.Get("Mcp-Session-Id") != "s1" {
				http.Error(w, "no session", http.StatusNotFound)
				return
			}
			close(pong)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL + "/mcp"})
	defer c.Close()
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+httpInitParams+`}`)); err != nil {
		t.Fatal(err)
	}
	if m := httpRead(t, ctx, c); m.Method != "ping" {
		t.Fatalf("first message %+v, want the server's ping", m)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Write(wctx, []byte(`{"jsonrpc":"2.0","id":"srv-ping","result":{}}`)); err != nil {
		t.Fatalf("answering the server's ping while initialize is pending: %v (held until initialize is answered, which waits for this pong)", err)
	}
	httpWantResult(t, httpRead(t, ctx, c))
}

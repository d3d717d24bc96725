package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// A batch (MCP 2025-03-26) sent to a bridged upstream that answers it with
// one batch array gets every answer, instead of a POST that waits forever.
func TestBridgedBatchAnsweredWithArray(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.routes["u"].dialer = &pipeDialer{model: &upstreamModel{}, arrays: true}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	c := &http.Client{Timeout: 5 * time.Second}
	post := func(sid, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp/u", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set(hdrSession, sid)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", body, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST %s: reading the answer: %v (got %q)", body, err, b)
		}
		return resp, string(b)
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batcher","version":"1"}}}`)
	sid := resp.Header.Get(hdrSession)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	resp, body = post(sid, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}]`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":1`) || !strings.Contains(body, `"id":2`) {
		t.Fatalf("batch: got %d %q, want both answers", resp.StatusCode, body)
	}
}

// A connection (/ws, /sse, stdio) is a session too: when it ends,
// OnSessionEnd hears of it, so its session-scoped memory can go.
func TestConnectionEndIsSessionEnd(t *testing.T) {
	ended := make(chan string, 1)
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}, OnSessionEnd: func(id string) { tell(t, ended, id) }},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.routes["u"].dialer = &pipeDialer{model: &upstreamModel{}}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/u"}).Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case id := <-ended:
		if id == "" {
			t.Error("OnSessionEnd got an empty session id")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the WebSocket connection ended, OnSessionEnd was not called")
	}
}

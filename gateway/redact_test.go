package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUpstreamErrorsHideURLSecrets checks that an unreachable upstream's
// URL reaches the client, in every error it can see, without its query
// string or credentials.
func TestUpstreamErrorsHideURLSecrets(t *testing.T) {
	addr := closedAddr(t)
	secret := "?api_key=secret-key&token=secret-token"
	ups := []Upstream{
		{Name: "http", URL: "http://alice:secret-pw@" + addr + "/mcp" + secret},
		{Name: "sse", Transport: TransportSSE, URL: "http://alice:secret-pw@" + addr + "/sse" + secret},
		{Name: "ws", Transport: TransportWebSocket, URL: "ws://alice:secret-pw@" + addr + "/ws" + secret},
	}
	g, err := New(Options{Upstreams: ups}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)

	check := func(t *testing.T, what, got string) {
		t.Helper()
		if strings.Contains(got, "secret") {
			t.Errorf("%s: got %q, which shows the URL's secrets", what, got)
		}
		if !strings.Contains(got, addr) {
			t.Errorf("%s: got %q, want an error naming the upstream's address %s", what, got, addr)
		}
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, up := range ups {
		t.Run(up.Name, func(t *testing.T) {
			u := gw.URL + "/mcp/" + up.Name
			_, _, body := post(t, u, nil, init)
			check(t, "initialize", body)
			_, _, body = post(t, u, modernHeaders("tools/call", "echo"), modernCall(2, "echo", `{}`))
			check(t, "2026 call", body)

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/"+up.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := ws.WriteMessage(websocket.TextMessage, []byte(init)); err != nil {
				t.Fatal(err)
			}
			_, msg, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			check(t, "websocket initialize", string(msg))
		})
	}
	// The GET stream and DELETE of an HTTP upstream session: a session
	// exists only once an upstream answered, so ask for one it never had.
	resp, err := http.Get(gw.URL + "/mcp/http")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check(t, "GET stream", string(body))
}

func TestRedactURLErrors(t *testing.T) {
	inner := &url.Error{Op: "Post", URL: "https://bob:pw@example.com:8443/mcp?api_key=k#frag", Err: errors.New("connection refused")}
	tests := []struct {
		err  error
		want string
	}{
		{inner, `Post "https://example.com:8443/…": connection refused`},
		{fmt.Errorf("calling: %w", inner), `calling: Post "https://example.com:8443/…": connection refused`},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		if got := redactURLs(tt.err); got != tt.want {
			t.Errorf("redactURLs(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
}

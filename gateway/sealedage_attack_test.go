package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackSealedSessionNeverExpires: a sealed session id (session_keys)
// is the session itself, and any replica holding the key serves it; a
// copy of it (a log, a proxy, a stolen header) worked until the key was
// rotated out. Now it carries its issue time, and past SessionMaxAge
// every replica refuses it with 404 — the answer the MCP specification
// has a client take as its session gone, and start a new one — the
// replica that opened it and one that never saw it, for a POST, a GET
// stream and a DELETE; a route's session and a virtual server's. An id
// whose time is put forward does not open.
func TestAttackSealedSessionNeverExpires(t *testing.T) {
	if got := (&Options{}).sessionMaxAge(); got != 24*time.Hour {
		t.Errorf("default max age: got %s, want 24h (README)", got)
	}
	if got := (&Options{SessionMaxAge: -1}).sessionMaxAge(); got != 0 {
		t.Errorf("negative max age: got %s, want none", got)
	}
	up := strictUpstream()
	t.Cleanup(up.Close)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	var urls []string
	for range 2 {
		g, err := New(Options{
			Upstreams:          []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
			VirtualServers:     []VirtualServer{{Naming: NamingPrefix}},
			SessionKeys:        [][]byte{key(1)},
			SessionMaxAge:      time.Hour,
			SessionIdleTimeout: 100 * time.Hour, // not what ends it here
			now:                clock.now,
		}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL)
	}
	for _, tc := range []struct{ name, path, tool string }{
		{"route", "/mcp/demo", "echo"},
		{"virtual server", "/mcp", "demo_echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := openSession(t, urls[0]+tc.path, "alice", nil)
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{"message":"hop"}}}`
			clock.add(59 * time.Minute)
			for i, u := range urls {
				if status, _, body := post(t, u+tc.path, hdr, call); status != 200 || !strings.Contains(body, "Echo: hop") {
					t.Fatalf("before its max age, through replica %d: %d %s", i, status, body)
				}
			}
			clock.add(2 * time.Minute)
			for i, u := range urls {
				status, _, body := post(t, u+tc.path, hdr, call)
				if status != http.StatusNotFound || !strings.Contains(body, "expired") {
					t.Errorf("past its max age, through replica %d: %d %s, want 404 saying it expired", i, status, body)
				}
				for _, method := range []string{http.MethodGet, http.MethodDelete} {
					req, _ := http.NewRequest(method, u+tc.path, nil)
					for k, v := range hdr {
						req.Header.Set(k, v)
					}
					req.Header.Set("Accept", "text/event-stream")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("%s past its max age, through replica %d: %d, want 404", method, i, resp.StatusCode)
					}
				}
			}
			// Its time put forward: not an id any replica sealed.
			prefix, rest, _ := strings.Cut(hdr[hdrSession], ".")
			_, sealed, _ := strings.Cut(rest, ".")
			younger := with(hdr, hdrSession, prefix+"."+strconv.FormatInt(clock.now().Unix(), 36)+"."+sealed)
			for i, u := range urls {
				if status, _, body := post(t, u+tc.path, younger, call); status != http.StatusNotFound {
					t.Errorf("its time put forward, through replica %d: %d %s, want 404", i, status, body)
				}
			}
			// A new session, opened now, is served.
			fresh := openSession(t, urls[1]+tc.path, "alice", nil)
			if status, _, body := post(t, urls[0]+tc.path, fresh, call); status != 200 || !strings.Contains(body, "Echo: hop") {
				t.Errorf("a new session: %d %s", status, body)
			}
		})
	}
	// go-sdk's client takes the 404 as its session gone (ErrSessionMissing),
	// on which the MCP specification has a client initialize again.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: urls[0] + "/mcp/demo", DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	clock.add(61 * time.Minute)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hop"}}); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("go-sdk's call past the max age: got %v, want ErrSessionMissing", err)
	}
}

// TestAttackSealedGetStreamOutlivesAge: a sealed session past
// session_max_age is refused on every request, but its GET stream opened
// just before went on for as long as the client kept it: the server's
// messages (sampling, elicitation, notifications) of a session that no
// longer exists, unbounded. Now the stream ends at the session's expiry,
// on a route and a virtual server, and the client's next GET is 404.
func TestAttackSealedGetStreamOutlivesAge(t *testing.T) {
	up := strictUpstream()
	t.Cleanup(up.Close)
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{Naming: NamingPrefix}},
		SessionKeys:    [][]byte{key(1)},
		SessionMaxAge:  3 * time.Second, // ids carry their issue time in seconds: 2-3 s left
	}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	get := func(ctx context.Context, url string, hdr map[string]string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept", "text/event-stream")
		return http.DefaultClient.Do(req)
	}
	for _, path := range []string{"/mcp/demo", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			hdr := openSession(t, gw.URL+path, "alice", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			resp, err := get(ctx, gw.URL+path, hdr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET stream before the session's expiry: %d", resp.StatusCode)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			if ctx.Err() != nil {
				t.Fatalf("the GET stream of a session past its max age still open after 8s (%v)", err)
			}
			again, err := get(ctx, gw.URL+path, hdr)
			if err != nil {
				t.Fatal(err)
			}
			again.Body.Close()
			if again.StatusCode != http.StatusNotFound {
				t.Errorf("GET after the stream ended: %d, want 404 (expired)", again.StatusCode)
			}
		})
	}
}

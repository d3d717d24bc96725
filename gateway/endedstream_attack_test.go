package gateway

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackEndedSessionGETStreamOtherReplica: replicas A and B share
// session keys and a real redis-server. Alice's go-sdk client works
// through A; an attacker holding a copy of her session id has a GET
// stream open on B, which carries what the upstream (mcp-go) sends her
// session: notifications, and requests to her client. Alice ends the
// session (DELETE through A), which the upstream acknowledges but does
// not end on its side. B's stream must then end, carrying
// nothing the upstream sends after (B asks the shared store before each
// message), or nothing sent at all (B asks it every endPoll), and the id
// opens no new one: on a route and on a virtual server. Before, B's stream stayed open, and
// went on delivering the session's messages to its holder until the id
// expired (24 hours by default).
func TestAttackEndedSessionGETStreamOtherReplica(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		virtual    []VirtualServer
		idle       bool // the upstream sends nothing after the end
		maxAge     time.Duration
	}{
		{"route", "/mcp/up", nil, false, 0},
		{"virtual server", "/mcp", []VirtualServer{{}}, false, 0},
		{"route idle", "/mcp/up", nil, true, 0},
		{"virtual server idle", "/mcp", []VirtualServer{{}}, true, 0},
		// Sessions without a maximum age (SessionMaxAge < 0): before,
		// their streams were not cut at all.
		{"route, no maximum age", "/mcp/up", nil, false, -1},
		{"virtual server idle, no maximum age", "/mcp", []VirtualServer{{}}, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mgoserver.NewMCPServer("announcer", "1", mgoserver.WithToolCapabilities(true), mgoserver.WithLogging())
			s.AddTool(mgomcp.NewTool("noop"), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
				return mgomcp.NewToolResultText("ok"), nil
			})
			// The upstream acknowledges DELETE but keeps the session,
			// which goes on sending: what the gateway's client sees of
			// a session must not hang on the upstream's ending it.
			h := mgoserver.NewStreamableHTTPServer(s)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(up.Close)
			store := sharedStore(t, redistest.Start(t))
			replica := func() string {
				g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}}, VirtualServers: tc.virtual,
					SessionKeys: [][]byte{key(1)}, SessionMaxAge: tc.maxAge, Exchanges: store}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g.Handler())
				t.Cleanup(func() { closeServed(t, gw, g) })
				return gw.URL + tc.path
			}
			a, b := replica(), replica()

			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			hdr := map[string]string{hdrSession: cs.ID(), "Mcp-Protocol-Version": "2025-11-25"}

			// The attacker's GET stream on B.
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b, nil)
			req.Header.Set("Accept", "text/event-stream")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET on B: %d", resp.StatusCode)
			}
			data := make(chan string, 64)
			go func() {
				defer close(data)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						data <- d
					}
				}
			}()
			// Until the upstream's stream for B is open it has nowhere to
			// send: announce until one arrives.
			for i := 0; ; i++ {
				s.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": fmt.Sprint("before-", i)})
				select {
				case d, ok := <-data:
					if !ok {
						t.Fatal("B's stream ended before the session did")
					}
					if !strings.Contains(d, "before-") {
						t.Fatalf("B's stream: %s", d)
					}
				case <-time.After(200 * time.Millisecond):
					continue
				}
				break
			}

			if err := cs.Close(); err != nil { // DELETE through A
				t.Fatalf("ending the session through A: %v", err)
			}
			if st := deleteSession(t, a, hdr); st != http.StatusNotFound {
				t.Fatalf("the session after its DELETE, on A: %d, want 404", st)
			}
			// B's stream ends; what the upstream sends after must not
			// come through. The deadline only tells a stream that never
			// ends from one that does.
			deadline := time.After(15 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for ended := false; !ended; {
				select {
				case d, ok := <-data:
					switch {
					case !ok:
						ended = true
					case strings.Contains(d, "after-ended"):
						t.Fatalf("B's stream carried the ended session's message: %s", d)
					}
				case <-tick.C:
					if tc.idle {
						continue
					}
					s.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "after-ended"})
				case <-deadline:
					t.Fatal("B's GET stream of the ended session stayed open")
				}
			}
			req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, b, nil)
			for k, v := range hdr {
				req2.Header.Set(k, v)
			}
			req2.Header.Set("Accept", "text/event-stream")
			resp2, err := http.DefaultClient.Do(req2)
			if err != nil {
				t.Fatal(err)
			}
			resp2.Body.Close()
			if resp2.StatusCode != http.StatusNotFound {
				t.Errorf("a new GET of the ended session on B: %d, want 404", resp2.StatusCode)
			}
		})
	}
}

package gateway

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackEndedSessionPOSTStreamOtherReplica: replicas A and B share
// session keys and a real redis-server. An attacker holding a copy of
// alice's session id calls a tool through B, whose upstream (mcp-go)
// answers on an event stream and, while the call runs, asks the client
// its user something (elicitation/create, on the call's stream as
// mcp-go sends it: what the server tells the user, to whoever holds the
// stream). Alice ends the session (DELETE
// through A) before the request is sent. B's stream must then end,
// carrying nothing the upstream sends after, or while it sends nothing:
// on a route and on a virtual server. Before, only GET streams were cut (TestAttackEndedSessionGETStreamOtherReplica):
// the call's stream went on delivering the ended session's requests to
// its holder for as long as the call ran.
func TestAttackEndedSessionPOSTStreamOtherReplica(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		virtual    []VirtualServer
		idle       bool // the upstream sends nothing until the stream ends
	}{
		{"route", "/mcp/up", nil, false},
		{"virtual server", "/mcp", []VirtualServer{{}}, false},
		{"route idle", "/mcp/up", nil, true},
		{"virtual server idle", "/mcp", []VirtualServer{{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			s := mgoserver.NewMCPServer("asker", "1", mgoserver.WithToolCapabilities(true), mgoserver.WithLogging(), mgoserver.WithElicitation())
			s.AddTool(mgomcp.NewTool("ask"), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
				_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "before"})
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				_, _ = s.RequestElicitation(ctx, mgomcp.ElicitationRequest{Params: mgomcp.ElicitationParams{
					Message: "after-ended: your one-time code is 123456", RequestedSchema: map[string]any{"type": "object"}}})
				return mgomcp.NewToolResultText("after-ended result"), nil
			})
			h := mgoserver.NewStreamableHTTPServer(s)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					w.WriteHeader(http.StatusNoContent) // acknowledged; the session goes on upstream
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(up.Close)
			store := sharedStore(t, redistest.Start(t))
			replica := func() string {
				g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}}, VirtualServers: tc.virtual,
					SessionKeys: [][]byte{key(1)}, Exchanges: store}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g.Handler())
				t.Cleanup(func() { closeServed(t, gw, g) })
				return gw.URL + tc.path
			}
			a, b := replica(), replica()
			hdr := initializeWith(t, a, `{"elicitation":{"form":{}}}`)

			if status, _, body := post(t, b, hdr, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); status != 200 || !strings.Contains(body, `"ask"`) {
				t.Fatalf("tools/list through B: %d %s", status, body)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			resp, err := sendPost(ctx, b, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !isEventStream(resp.Header) {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("the call through B: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
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
			if d := <-data; !strings.Contains(d, "before") {
				t.Fatalf("B's stream, first: %s", d)
			}

			if st := deleteSession(t, a, hdr); st/100 != 2 {
				t.Fatalf("DELETE through A: %d", st)
			}
			if !tc.idle {
				close(release)
			}
			// The deadline only tells a stream that never ends from one
			// that does (B asks the store every endPoll).
			deadline := time.After(15 * time.Second)
			for ended := false; !ended; {
				select {
				case d, ok := <-data:
					if !ok {
						ended = true
					} else if strings.Contains(d, "after-ended") {
						t.Errorf("B's stream carried the ended session's message: %s", d)
					}
				case <-deadline:
					t.Fatal("B's stream of the ended session stayed open")
				}
			}
			if tc.idle {
				close(release)
			}
		})
	}
}

package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// refusingEnds is an mcp-go session id manager whose server refuses its
// clients' DELETE (405), as the specification lets a server do.
type refusingEnds struct {
	*mgoserver.InsecureStatefulSessionIdManager
	asked atomic.Int32
}

func (m *refusingEnds) Terminate(string) (bool, error) {
	m.asked.Add(1)
	return true, nil
}

// TestAttackDeleteRefusedUpstreamEndsSession: alice ends her session
// with DELETE, and the route's upstream (mcp-go) refuses to end its own
// (405, as the specification lets it). The gateway's session is the
// gateway's to end: the DELETE is answered as a session ended (2xx), and
// the id, in an attacker's hands, is refused (404) from then on by every
// replica, the upstream's session left to idle out there. Before, the
// gateway passed the 405 on and kept the session: the client's logout
// left its id, a bearer credential, working until it went idle.
func TestAttackDeleteRefusedUpstreamEndsSession(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"noop","arguments":{}}}`
	for _, tc := range []struct {
		name     string
		sealed   bool
		replicas int
	}{
		{"one replica", false, 1},
		{"one replica, sealed", true, 1},
		{"two replicas", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mgoserver.NewMCPServer("refuser", "1", mgoserver.WithToolCapabilities(true))
			s.AddTool(mgomcp.NewTool("noop"), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
				return mgomcp.NewToolResultText("ok"), nil
			})
			ends := &refusingEnds{InsecureStatefulSessionIdManager: &mgoserver.InsecureStatefulSessionIdManager{}}
			up := httptest.NewServer(mgoserver.NewStreamableHTTPServer(s, mgoserver.WithSessionIdManager(ends)))
			t.Cleanup(up.Close)
			var keys [][]byte
			if tc.sealed {
				keys = [][]byte{key(1)}
			}
			var store ExchangeStore
			if tc.replicas > 1 {
				store = sharedStore(t, redistest.Start(t))
			}
			var urls []string
			for range tc.replicas {
				g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}}, SessionKeys: keys, Exchanges: store},
					&intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g.Handler())
				t.Cleanup(func() { closeServed(t, gw, g) })
				urls = append(urls, gw.URL+"/mcp/up")
			}

			hdr := openSession(t, urls[0], "alice", nil)
			for _, u := range urls {
				if status, _, body := post(t, u, hdr, call); status != 200 || !strings.Contains(body, `"ok"`) {
					t.Fatalf("the session's call: %d %s", status, body)
				}
			}
			if st := deleteSession(t, urls[0], hdr); st/100 != 2 {
				t.Errorf("DELETE the upstream refused: %d, want the gateway's session ended (2xx)", st)
			}
			if ends.asked.Load() != 1 {
				t.Errorf("the upstream was asked to end its session %d times, want 1", ends.asked.Load())
			}
			for i, u := range urls {
				if status, _, body := post(t, u, hdr, call); status != http.StatusNotFound {
					t.Errorf("replica %d, the ended session's id: %d %s, want 404", i, status, body)
				}
			}
		})
	}
}

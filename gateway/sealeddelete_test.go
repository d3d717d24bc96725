package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// deleteSession sends DELETE for the session in hdr to url and returns the status.
func deleteSession(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSealedSessionDeadAfterDelete (found by an attacker review): a sealed session id the client
// ended with DELETE is not valid again, not even on the replica that
// processed the DELETE, whatever the upstream does with its own session
// id afterwards (the demo server, mcp-go, keeps serving it). Without
// session keys the same replay is a 404.
func TestSealedSessionDeadAfterDelete(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"zombie"}}}`
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "unsealed", true: "sealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			var keys [][]byte
			if sealed {
				keys = [][]byte{key(1)}
			}
			rs := replicas(t, 1, keys...)
			hdr := openSession(t, rs[0]+"/mcp/demo", "alice", nil)
			if status, _, body := post(t, rs[0]+"/mcp/demo", hdr, call); status != 200 || !strings.Contains(body, "Echo: zombie") {
				t.Fatalf("call before DELETE: %d %s", status, body)
			}
			if st := deleteSession(t, rs[0]+"/mcp/demo", hdr); st != http.StatusOK && st != http.StatusNoContent {
				t.Fatalf("DELETE: %d", st)
			}
			if status, _, body := post(t, rs[0]+"/mcp/demo", hdr, call); status == 200 && strings.Contains(body, "Echo: zombie") {
				t.Errorf("same replica, call after DELETE: %d %s, want 404", status, body)
			}
		})
	}
}

// TestSealedVirtualSessionDeadAfterDelete: a virtual server's sealed
// session id the client ended with DELETE is not valid again, even with an
// upstream that keeps serving session ids it was told to end (mcp-go, the
// demo server's); with one that refuses them (the go-sdk) the revived
// virtual session still answers 200, with no tools.
func TestSealedVirtualSessionDeadAfterDelete(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
		SessionKeys:    [][]byte{key(1)},
	}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`
	status, h, body := post(t, gw.URL+"/mcp", nil, init)
	sid := h.Get(hdrSession)
	if status != 200 || !strings.HasPrefix(sid, virtualPrefix) {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	hdr := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, gw.URL+"/mcp", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"zombie"}}}`
	if status, _, body := post(t, gw.URL+"/mcp", hdr, call); status != 200 || !strings.Contains(body, "Echo: zombie") {
		t.Fatalf("call before DELETE: %d %s", status, body)
	}
	post(t, gw.URL+"/mcp", hdr, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	if st := deleteSession(t, gw.URL+"/mcp", hdr); st != http.StatusOK && st != http.StatusNoContent {
		t.Fatalf("DELETE: %d", st)
	}
	// The session is still there: it lists the tools, and calls one.
	status, _, body = post(t, gw.URL+"/mcp", hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	t.Logf("tools/list after DELETE: %d %.120s", status, body)
	status, _, body = post(t, gw.URL+"/mcp", hdr, call)
	if status == 200 && strings.Contains(body, "Echo: zombie") {
		t.Errorf("call after DELETE with the ended virtual session id: %d %s, want 404", status, body)
	}
}

// TestRequestStateReplayAndRace: a requestState answered once cannot
// release the call again (replayed after use), and two retries racing with
// the same state forward the call once.
func TestRequestStateReplayAndRace(t *testing.T) {
	const caps = `{"elicitation":{}}`
	args := `{"a":2,"b":3}`
	t.Run("replay after use", func(t *testing.T) {
		f, _ := approvalFixture(t, Options{}, false)
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		retry := modernCallWith(2, args, caps, "agent-a", answerParams("accept", held.RequestState))
		if _, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), retry); !strings.Contains(body, `"text":"5"`) {
			t.Fatalf("first answer: %s", body)
		}
		if _, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), retry); strings.Contains(body, `"text":"5"`) {
			t.Errorf("replayed answer released the call again: %s", body)
		}
	})
	t.Run("race", func(t *testing.T) {
		f, _ := approvalFixture(t, Options{}, false)
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range 8 {
			wg.Go(func() {
				_, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(10+i, args, caps, "agent-a", answerParams("accept", held.RequestState)))
				if strings.Contains(body, `"text":"5"`) {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if ok != 1 {
			t.Errorf("%d retries with one answer were forwarded, want 1", ok)
		}
	})
}

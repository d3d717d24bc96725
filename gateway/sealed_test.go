package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// replicas starts n gateways with the same session keys in front of one
// HTTP upstream (the demo server) and one stdio upstream each.
func replicas(t *testing.T, n int, keys ...[]byte) []string {
	t.Helper()
	return replicasOf(t, httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})), n, keys...)
}

// strictUpstream is a go-sdk server, which refuses a session id it has
// ended (mcp-go v1.2.1, the demo's, serves it on).
func strictUpstream() *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "strict", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

func replicasOf(t *testing.T, up *httptest.Server, n int, keys ...[]byte) []string {
	t.Helper()
	t.Cleanup(up.Close)
	bin := buildDemoServer(t)
	var urls []string
	for range n {
		g, err := New(Options{
			Upstreams: []Upstream{
				{Name: "demo", URL: up.URL + "/mcp"},
				{Name: "other", URL: up.URL + "/mcp"},
				{Name: "local", Command: bin},
			},
			SessionKeys: keys,
		}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL)
	}
	return urls
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// TestSessionAcrossReplicas: a session opened on replica A is served by B
// and C (calls, the GET stream), is never valid on another route or for
// another agent, a tampered or foreign-key id is unknown, and once ended
// through one replica it is ended on all.
func TestSessionAcrossReplicas(t *testing.T) {
	up := strictUpstream()
	rs := replicasOf(t, up, 3, key(1), key(2))
	hdr := openSession(t, rs[0]+"/mcp/demo", "alice", nil)
	sid := hdr[hdrSession]
	if !strings.HasPrefix(sid, sealedPrefix) {
		t.Fatalf("session id %q is not sealed", sid)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hop"}}}`
	for i, u := range rs {
		if status, _, body := post(t, u+"/mcp/demo", hdr, call); status != 200 || !strings.Contains(body, "Echo: hop") {
			t.Fatalf("call through replica %d: %d %s", i, status, body)
		}
	}
	// The GET stream on another replica.
	req, _ := http.NewRequest(http.MethodGet, rs[2]+"/mcp/demo", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 405 {
		t.Errorf("GET stream through replica 2: %d, want the upstream's answer (200 or 405)", resp.StatusCode)
	}

	// Never on another route, never for another agent, never tampered.
	if status, _, _ := post(t, rs[1]+"/mcp/other", hdr, call); status != 404 {
		t.Errorf("session on another route through replica 1: %d, want 404", status)
	}
	// Another client name in _meta: another agent, on a replica that
	// has not seen the session yet.
	fresh := replicasOf(t, httptest.NewServer(up.Config.Handler), 1, key(1))
	if status, _, body := post(t, fresh[0]+"/mcp/demo", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"bob","version":"1"}}}}`); status != 404 {
		t.Errorf("alice's session claimed by bob on a new replica: %d %s, want 404", status, body)
	}
	tampered := sid[:len(sid)-2] + "AA"
	if status, _, _ := post(t, rs[1]+"/mcp/demo", with(hdr, hdrSession, tampered), call); status != 404 {
		t.Errorf("tampered id: %d, want 404", status)
	}
	other := replicasOf(t, httptest.NewServer(up.Config.Handler), 1, key(9))
	if status, _, _ := post(t, other[0]+"/mcp/demo", hdr, call); status != 404 {
		t.Errorf("id under a key this replica does not have: %d, want 404", status)
	}
	// Rotation: a replica whose current key is new still opens ids sealed
	// under the old one.
	rotated := replicasOf(t, httptest.NewServer(up.Config.Handler), 1, key(3), key(1))
	if status, _, body := post(t, rotated[0]+"/mcp/demo", hdr, call); status != 200 || !strings.Contains(body, "Echo: hop") {
		t.Errorf("old key after rotation: %d %s", status, body)
	}

	// Ended through B, ended everywhere: the upstream's session is gone.
	req, _ = http.NewRequest(http.MethodDelete, rs[1]+"/mcp/demo", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE through replica 1: %d", resp.StatusCode)
	}
	for i, u := range rs {
		if status, _, body := post(t, u+"/mcp/demo", hdr, call); status == 200 && strings.Contains(body, "Echo") {
			t.Errorf("call through replica %d after DELETE: %d %s", i, status, body)
		}
	}
}

// TestBridgedSessionStaysOnItsReplica: a stdio upstream's session cannot
// move, and another replica says so instead of "unknown session".
func TestBridgedSessionStaysOnItsReplica(t *testing.T) {
	rs := replicas(t, 2, key(1))
	hdr := openSession(t, rs[0]+"/mcp/local", "alice", nil)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"here"}}}`
	if status, _, body := post(t, rs[0]+"/mcp/local", hdr, call); status != 200 || !strings.Contains(body, "Echo: here") {
		t.Fatalf("call on its own replica: %d %s", status, body)
	}
	status, _, body := post(t, rs[1]+"/mcp/local", hdr, call)
	if status != 404 || !strings.Contains(body, "another replica") {
		t.Errorf("call on another replica: %d %s, want 404 naming the other replica", status, body)
	}
}

// TestReplicaGoneSessionGoesOn: a replica that shuts down (or lets an idle
// session go) does not end the upstream session another replica serves.
func TestReplicaGoneSessionGoesOn(t *testing.T) {
	up := strictUpstream()
	t.Cleanup(up.Close)
	mk := func() (*Gateway, *httptest.Server) {
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, SessionKeys: [][]byte{key(1)}},
			&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return g, httptest.NewServer(g.Handler())
	}
	ga, a := mk()
	gb, b := mk()
	t.Cleanup(func() { closeServed(t, b, gb) })
	hdr := openSession(t, a.URL+"/mcp/demo", "alice", nil)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"on"}}}`
	if status, _, body := post(t, b.URL+"/mcp/demo", hdr, call); status != 200 || !strings.Contains(body, "Echo: on") {
		t.Fatalf("call through B: %d %s", status, body)
	}
	a.Close()
	ga.Close() // A goes away with the session in its table
	if status, _, body := post(t, b.URL+"/mcp/demo", hdr, call); status != 200 || !strings.Contains(body, "Echo: on") {
		t.Fatalf("call through B after A shut down: %d %s", status, body)
	}
}

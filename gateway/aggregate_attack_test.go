package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAggregateAttacks: what an agent might try on a virtual server.
func TestAggregateAttacks(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer up.Close()
	soft := &intercept.StaticDecider{Default: intercept.Allow, Deny: []string{"demo/send_email"}, Mode: intercept.ModeToolResult}
	hard := &intercept.StaticDecider{Default: intercept.Deny, Mode: intercept.ModeThrow}
	dec := &calls{next: intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if d.ToolName == "web_search" {
			return hard.Decide(ctx, d)
		}
		return soft.Decide(ctx, d)
	})}
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
		MaxSessions:    3, MaxSessionsPerAgent: 100, MaxSessionsPerClient: 100,
	}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(principalHeader(g.Handler()))
	defer srv.Close()
	send := func(principal, session, body string) (int, http.Header, string) {
		hdr := map[string]string{"X-Principal": principal}
		if session != "" {
			hdr["Mcp-Session-Id"] = session
		}
		return post(t, srv.URL+"/mcp", hdr, body)
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a"}}}`
	code, h1, _ := send("alice", "", init)
	sid := h1.Get("Mcp-Session-Id")
	if code != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", code, sid)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`
	if code, _, body := send("alice", sid, call); code != 200 || !strings.Contains(body, `"isError":false`) && strings.Contains(body, `"error"`) {
		t.Fatalf("alice's call: %d %s", code, body)
	}
	// Another principal holding alice's session id gets nothing.
	if code, _, body := send("mallory", sid, call); code != http.StatusNotFound {
		t.Errorf("mallory with alice's session: %d %s, want 404", code, body)
	}
	if code, _, _ := send("", sid, call); code != http.StatusNotFound {
		t.Errorf("no principal with alice's session: %d, want 404", code)
	}
	// A batch, a non-JSON-RPC body and a call without a session are clear errors.
	for _, tc := range []struct{ session, body, want string }{
		{sid, "[" + call + "]", "batches are not accepted"},
		{sid, `{"id":3,"method":"tools/call"}`, "not a JSON-RPC 2.0 request"},
		{"", call, "Mcp-Session-Id is required"},
	} {
		if code, _, body := send("alice", tc.session, tc.body); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%.40s: %d %s, want 400 %q", tc.body, code, body, tc.want)
		}
	}
	// Calling the upstream's name of a denied tool goes through its policy.
	if _, _, body := send("alice", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"a","subject":"b","body":"c"}}}`); !strings.Contains(body, `"isError":true`) {
		t.Errorf("send_email: %s, want the soft deny", body)
	}
	if got := dec.last(); got != "demo/send_email" {
		t.Errorf("policy saw %q", got)
	}
	// A hard deny reaches the client as the route's JSON-RPC error, code,
	// message and envelope unchanged.
	_, _, viaVirtual := send("alice", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"web_search","arguments":{"query":"q"}}}`)
	if !strings.Contains(viaVirtual, `"code":-32001`) || !strings.Contains(viaVirtual, `"data":`) || !strings.Contains(viaVirtual, "web_search") || !strings.Contains(viaVirtual, `"id":5`) {
		t.Errorf("hard deny through /mcp: %s", viaVirtual)
	}
	// A flood of sessions stops at max_sessions with 503 and Retry-After.
	var refused bool
	for range 5 {
		code, hdr, _ := send("alice", "", init)
		if code == http.StatusServiceUnavailable && hdr.Get("Retry-After") != "" {
			refused = true
			break
		}
	}
	if !refused {
		t.Error("no 503 after max_sessions initializes")
	}
}

// TestAggregateLimitsAndStalls: one address cannot take every session of
// a virtual server (max_sessions_per_client, 429), and an upstream that
// stalls drops out of a merged list (with an event) instead of holding it.
func TestAggregateLimitsAndStalls(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer up.Close()
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // answers nothing, not even initialize
	}))
	defer stalled.Close()
	defer close(release)
	dropped := make(chan string, 8)
	g, err := New(Options{
		Upstreams:            []Upstream{{Name: "demo", URL: up.URL + "/mcp"}, {Name: "stuck", URL: stalled.URL + "/mcp"}},
		VirtualServers:       []VirtualServer{{}},
		MaxSessionsPerClient: 2,
		OnAggregateDropped:   func(_, upstream, why string) { tell(t, dropped, upstream+": "+why) },
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.virtual[""].listTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a"}}}`
	_, h, _ := post(t, srv.URL+"/mcp", nil, init)
	sid := h.Get("Mcp-Session-Id")
	post(t, srv.URL+"/mcp", nil, init)
	if code, _, body := post(t, srv.URL+"/mcp", nil, init); code != http.StatusTooManyRequests || !strings.Contains(body, "max_sessions_per_client") {
		t.Errorf("third session from one address: %d %s", code, body)
	}
	start := time.Now()
	code, _, body := post(t, srv.URL+"/mcp", map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if code != 200 || !strings.Contains(body, `"echo"`) || time.Since(start) > 5*time.Second {
		t.Fatalf("tools/list with a stalled upstream: %d after %v: %.300s", code, time.Since(start), body)
	}
	select {
	case d := <-dropped:
		if !strings.HasPrefix(d, "stuck: ") {
			t.Errorf("dropped %q, want the stalled upstream", d)
		}
	default:
		t.Error("no event for the stalled upstream")
	}
}

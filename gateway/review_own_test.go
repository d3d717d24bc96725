package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// The tests in this file were written by a review of the changes since
// d8d784f; each fails on the code it was written against.

// TestCancelledRequestsFillConnPending: a /ws (or /sse) connection may have
// at most maxConnPending requests waiting on its upstream (relay.pending).
// A request the client withdraws with notifications/cancelled stays in
// pending: relay.cancelled ends its span and measurement only. The MCP
// specification has the receiver of a cancellation not answer the
// cancelled request (the TypeScript SDK sends nothing for an aborted
// request), so nothing ever takes it out. A legitimate long-lived client
// that cancels requests (a user pressing stop) thus fills the bound
// without any request waiting, and from then on every request it sends
// on the connection, even a ping, is refused "not sent". (It also keeps
// the connection busy for good, so session_idle_timeout never ends it.)
// A cancelled request should leave pending (as the spans do) once the
// client has withdrawn it.
//
// A list was left out of that fix, to screen its answer should one come
// anyway: it stayed in pending for good, since a server does not answer
// it (and over Streamable HTTP in the 2026-07-28 era the cancel closes its
// stream, so none can come), and 1024 cancelled lists refused every
// request the same way. Only the latest maxCancels stay now.
//
// Each transport the relay serves is run: /ws, /sse and the stdio of
// `sluice wrap` (ServeConn).
func TestCancelledRequestsFillConnPending(t *testing.T) {
	for _, tr := range []string{"ws", "sse", "stdio"} {
		for _, method := range []string{"tools/call", "tools/list"} {
			t.Run(tr+"/"+method, func(t *testing.T) { testCancelledFillConnPending(t, tr, method) })
		}
	}
}

func testCancelledFillConnPending(t *testing.T, tr, method string) {
	g, base := startScriptedGateway(t, nil, Options{})
	g.routes["u"].dialer = silentUpstream{}
	cc := dialRelay(t, g, base, tr, "u")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// silentUpstream never answers a tools/call or a tools/list: each one
	// is withdrawn.
	params := `{"name":"echo","arguments":{"message":"x"}}`
	if method == "tools/list" {
		params = `{}`
	}
	for i := range maxConnPending + 8 {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, 100+i, method, params)
		if err := cc.c.Write(ctx, []byte(call)); err != nil {
			t.Fatal(err)
		}
		cancelled := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user stopped it"}}`, 100+i)
		if err := cc.c.Write(ctx, []byte(cancelled)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := cc.c.Read(ctx)
		if err != nil {
			t.Fatalf("no answer to the ping: %v", err)
		}
		m, err := intercept.DecodeMessage(b)
		if err != nil {
			continue
		}
		if m.Kind == intercept.KindError {
			t.Fatalf("every earlier call withdrawn (notifications/cancelled), none waiting, yet request %s is refused: %s", m.IDKey(), b)
		}
		if m.IDKey() == `"p"` {
			return
		}
	}
}

// TestStatelessCancelWriteLeaksBodyBudget: a 2026-07-28 request to a stdio
// upstream whose client leaves before the answer makes the handler tell
// the upstream with notifications/cancelled, written with
// context.Background(): on a hung upstream (one that stopped reading its
// stdin) that write waits on the writer lock, or on the full pipe, for
// good — the fix for TestStalledUpstreamLeaksBodyBudget lets a waiting
// write give up when its client leaves, but this one has no client left
// to end it. Every call that reached the hung upstream before it stopped
// reading thus keeps its handler goroutine and its bytes of
// max_inflight_body_bytes for the life of the process (and the first one
// keeps the route's writer lock). The cancellation should be bounded (a
// short timeout, or dropped when the lock is not free), so that a client
// that has left gives its bytes back whatever the upstream does.
func TestStatelessCancelWriteLeaksBodyBudget(t *testing.T) {
	deaf := &deafUpstream{}
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = deaf
	srv := httptest.NewServer(g.Handler())
	defer func() {
		// The hung server dies: the stuck writes fail, and Close ends.
		for _, f := range deaf.keep {
			f.Close()
		}
		srv.Close()
		g.Close()
	}()
	send := func(ctx context.Context, body string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp/u", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "echo") {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	// 100 calls of 1 KiB (atomic pipe writes): the first ~60 fill the
	// pipe's buffer and are sent; every client gives up after 1 s.
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			send(ctx, sizedCall(i+1, 1<<10))
		}()
	}
	wg.Wait()
	var held int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		g.bodies.mu.Lock()
		held = g.bodies.held
		g.bodies.mu.Unlock()
		if held == 0 {
			return
		}
	}
	t.Fatalf("5 s after every client of a hung stdio route left, the gateway still holds %d bytes of their bodies (max_inflight_body_bytes): each handler waits for good to write notifications/cancelled with context.Background()", held)
}

// perSessionTasks is a stdio upstream whose every connection (a child
// process per session, as for /ws, /sse and 2025-era bridged sessions)
// numbers its own tasks from 1: task ids are unique within the server
// that issues them, which is all MCP asks.
type perSessionTasks struct{}

func (perSessionTasks) Dial(ctx context.Context) (transport.Conn, error) {
	var mu sync.Mutex
	n := 0
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r struct {
			reqView
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
			return nil
		}
		id := string(r.ID)
		switch r.Method {
		case "initialize":
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"t","version":"1"}}}`)}
		case "tools/call":
			mu.Lock()
			n++
			task := fmt.Sprintf("task-%d", n)
			mu.Unlock()
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"taskId":"` + task + `","status":"working","createdAt":"2025-11-25T00:00:00Z","ttl":60000}}}`)}
		case "tasks/get":
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"taskId":"` + r.Params.TaskID + `","status":"completed","createdAt":"2025-11-25T00:00:00Z","ttl":60000}}`)}
		}
		return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)}
	}}
	return up.Dial(ctx)
}

// TestTaskIDsOfPerSessionUpstreams: the gateway keys a task's owner by
// upstream name and task id (intercept.ObserveTask), but on a /ws or /sse
// connection (and a 2025-era bridged session) every session has an
// upstream process of its own, whose task ids are its own: two sessions'
// upstreams may both issue "task-1". The first to be recorded keeps the
// id (ContainsOrAdd), so when alice has had a task-1 on her connection,
// bob's own task-1, created on his connection by his own call, is "task
// not found" to him: he cannot read the result of his own call. A task
// of a per-session upstream should be keyed by the session (or
// connection) too, so that each principal's own task is found.
func TestTaskIDsOfPerSessionUpstreams(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = perSessionTasks{}
	gw := principalGateway(t, g)
	dial := func(who string) *connClient {
		return dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/u", Header: http.Header{"X-Test-Principal": {who}}})
	}
	alice, bob := dial("alice"), dial("bob")
	for _, c := range []struct {
		who  string
		conn *connClient
	}{{"alice", alice}, {"bob", bob}} {
		m := c.conn.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"task":{"ttl":60000}}}`, "1")
		if m.Kind != intercept.KindResponse || intercept.TaskHandle(m.Result) != "task-1" {
			t.Fatalf("%s's call: %s", c.who, m.Raw)
		}
		got := c.conn.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"task-1"}}`, "2")
		if got.Kind != intercept.KindResponse {
			t.Errorf("%s's tasks/get of task-1, the task its own call just created on its own connection: %s", c.who, got.Raw)
		}
	}
}

// TestCancelledListAnswerScreened: a list the client cancelled stays
// waiting (the latest maxCancels of them) so that an answer the upstream
// sends anyway is screened as a list's: a tool the policy hides
// (hide_denied_tools) never reaches the client that way. Passed on as a
// cancelled request's late answer, it would go unscreened.
func TestCancelledListAnswerScreened(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
		&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = silentUpstream{listWhenCancelled: true}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	cc := dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/u"})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
	} {
		if err := cc.c.Write(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for {
		b, err := cc.c.Read(ctx)
		if err != nil {
			t.Fatalf("the cancelled list's late answer did not arrive: %v", err)
		}
		if m, err := intercept.DecodeMessage(b); err == nil && m.IDKey() == "7" {
			if strings.Contains(string(b), "send_email") || !strings.Contains(string(b), "echo") {
				t.Fatalf("late answer to a cancelled tools/list: %s; want it screened (echo listed, send_email hidden)", b)
			}
			return
		}
	}
}

// stdioDialer dials g's ServeConn (the stdio of `sluice wrap`) for
// upstream over pipes; the conn's Close ends it.
type stdioDialer struct {
	g        *Gateway
	upstream string
}

func (d stdioDialer) Dial(ctx context.Context) (transport.Conn, error) {
	toGW, fromClient := io.Pipe()
	toClient, fromGW := io.Pipe()
	go func() {
		_ = d.g.ServeConn(context.WithoutCancel(ctx), d.upstream, transport.NewStdioConn(toGW, fromGW, nil))
	}()
	return &pipedConn{Conn: transport.NewStdioConn(toClient, fromClient, nil), in: fromClient}, nil
}

// pipedConn closes the pipe into the gateway with the conn, so ServeConn
// ends.
type pipedConn struct {
	transport.Conn
	in *io.PipeWriter
}

func (c *pipedConn) Close() error {
	c.in.Close()
	return c.Conn.Close()
}

// dialRelay connects to upstream's route on g (served at base) over tr:
// "ws", "sse", or "stdio" (sluice wrap's ServeConn).
func dialRelay(t *testing.T, g *Gateway, base, tr, upstream string) *connClient {
	t.Helper()
	switch tr {
	case "ws":
		return dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/" + upstream})
	case "sse":
		return dialConn(t, &transport.SSEDialer{URL: base + "/sse/" + upstream})
	case "stdio":
		return dialConn(t, stdioDialer{g: g, upstream: upstream})
	}
	t.Fatalf("no transport %q", tr)
	return nil
}

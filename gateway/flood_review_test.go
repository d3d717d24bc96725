package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// The tests in this file were written by a flood/robustness review; each
// failed on the code it was written against.

// startScriptedGateway is startScripted returning the gateway too.
func startScriptedGateway(t *testing.T, up *scriptUpstream, o Options) (*Gateway, string) {
	t.Helper()
	o.Upstreams = []Upstream{{Name: "u", Command: "true"}}
	g, err := New(o, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = up
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	return g, srv.URL
}

// stalledPost sends a 2026-07-28 request on a raw connection with a small
// receive buffer and never reads the answer.
func stalledPost(t *testing.T, addr, body string) net.Conn {
	t.Helper()
	raddr, _ := net.ResolveTCPAddr("tcp", addr)
	conn, err := net.DialTCP("tcp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetReadBuffer(4096)
	fmt.Fprintf(conn, "POST /mcp/u HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	return conn
}

// TestStatelessOverflowFloodUnbounded: the stateless bridge keeps, for
// each call whose client does not read, up to maxOverflow (4 MiB) of
// progress beyond the stream's channel. That bound is per call, and the
// number of calls is bounded by nothing but max_inflight_body_bytes
// divided by a ~300-byte body: stateless requests are no sessions. N
// clients that each POST one call with a progress token and never read
// make the gateway hold N × 4 MiB (plus 16 channel slots each); 32 of
// them hold 128 MiB, 1,000 of them 4 GiB. What the gateway holds for
// clients that do not read should be bounded gateway-wide (a shared
// overflow budget past which notifications are dropped and counted, or a
// bound on stateless requests in flight that refuses the rest), not grow
// with the number of stalled clients.
func TestStatelessOverflowFloodUnbounded(t *testing.T) {
	const (
		clients = 32
		chunk   = 64 << 10
		perCall = 160 // 10 MiB of progress for each call, never answered
		bound   = 64 << 20
	)
	big := strings.Repeat("x", chunk)
	var sent atomic.Int64
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method != "tools/call" || len(r.Params.Meta.ProgressToken) == 0 {
			if r.Method != "" && len(r.ID) > 0 {
				return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{}}`)}
			}
			return nil
		}
		out := make([][]byte, 0, perCall)
		for i := range perCall {
			out = append(out, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":"%s"}}`, r.Params.Meta.ProgressToken, i, big)))
		}
		sent.Add(1)
		return out
	}}
	g, base := startScriptedGateway(t, up, Options{})
	addr := strings.TrimPrefix(base, "http://")
	for i := range clients {
		body := strings.Replace(modernCall(i+1, "echo", `{}`), `"_meta":{`, fmt.Sprintf(`"_meta":{"progressToken":"p%d",`, i), 1)
		stalledPost(t, addr, body)
	}
	b := g.stateless["u"].shared
	held := func() (n int64, calls int) {
		b.mu.Lock()
		cs := make([]*slCall, 0, len(b.calls))
		for _, c := range b.calls {
			cs = append(cs, c)
		}
		b.mu.Unlock()
		for _, c := range cs {
			c.s.omu.Lock()
			n += int64(c.s.overflowBytes)
			c.s.omu.Unlock()
		}
		return n, len(cs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Settled: nothing more held and nothing more sent for a second (a
	// gateway that refuses some of the calls never sends them upstream).
	var last, lastSent int64
	stable := 0
	for ctx.Err() == nil {
		n, calls := held()
		if n > bound {
			t.Fatalf("%d stalled stateless clients (%d calls pending) make the gateway hold %d MiB of undelivered progress in their overflow queues alone (past a gateway-wide %d MiB): the 4 MiB bound is per call and the calls are unbounded",
				clients, calls, n>>20, bound>>20)
		}
		if s := sent.Load(); n == last && s == lastSent && s > 0 {
			if stable++; stable == 5 {
				t.Logf("held %d MiB for %d stalled clients (%d calls sent upstream)", n>>20, clients, s)
				return
			}
		} else {
			stable = 0
		}
		last, lastSent = n, sent.Load()
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the upstream's progress was not taken in 60 s (sent for %d of %d calls)", sent.Load(), clients)
}

// deafUpstream is a stdio upstream on real pipes (deadlines work, as for
// a child process) that never reads what the gateway writes: a hung
// server.
type deafUpstream struct{ keep []*os.File }

func (d *deafUpstream) Dial(ctx context.Context) (transport.Conn, error) {
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	d.keep = append(d.keep, childIn, childOut)
	return transport.NewStdioConn(stdout, stdin, nil), nil
}

// sizedCall is a 2026-07-28 tools/call of echo padded to exactly n bytes.
func sizedCall(id, n int) string {
	base := modernCall(id, "echo", `{"pad":""}`)
	return modernCall(id, "echo", `{"pad":"`+strings.Repeat("x", n-len(base))+`"}`)
}

// TestStalledUpstreamLeaksBodyBudget: a stdio server that stops reading
// its stdin (hung, or busy) stalls the write of a 2026-07-28 request on
// the route's shared connection; that write holds the bridge's writer
// mutex for as long as its client stays connected. Every other request to
// the route then waits on the mutex, which no context ends: when those
// clients give up and disconnect, their handlers stay blocked for good,
// and so do the request body bytes each reserved in the gateway-wide
// max_inflight_body_bytes. Clients timing out against one hung route
// thus use up the budget of the whole gateway, and calls to healthy
// routes are refused with 503. A request whose client has left should
// give its bytes back (and its goroutine) whatever the upstream does.
func TestStalledUpstreamLeaksBodyBudget(t *testing.T) {
	const maxBody, inflight = 256 << 10, 1 << 20
	deaf := &deafUpstream{}
	echo := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
			return nil
		}
		return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`)}
	}}
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}, {Name: "v", Command: "true"}}, MaxBodyBytes: maxBody, MaxInflightBodyBytes: inflight},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer, g.routes["v"].dialer = deaf, echo
	srv := httptest.NewServer(g.Handler())
	defer closeServed(t, srv, g)
	send := func(ctx context.Context, route, body string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp/"+route, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "echo") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The first caller's write fills the pipe and waits; its client is
	// patient and stays connected.
	const holder = 200 << 10
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	go send(hctx, "u", sizedCall(1, holder))
	time.Sleep(300 * time.Millisecond)
	// Callers that give up after a while, with bodies that fill the rest
	// of the budget but for a few bytes.
	sizes := []int{maxBody - 1000, maxBody - 1000, maxBody - 1000}
	sizes = append(sizes, inflight-holder-3*(maxBody-1000)-400)
	for i, n := range sizes {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := send(ctx, "u", sizedCall(10+i, n))
		cancel()
		if err == nil {
			t.Fatalf("call %d to the hung route was answered", i)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	var held int64
	for time.Now().Before(deadline) {
		g.bodies.mu.Lock()
		held = g.bodies.held
		g.bodies.mu.Unlock()
		if held <= holder {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, err := send(ctx, "v", sizedCall(99, 2000))
	if held > holder || status != http.StatusOK {
		t.Fatalf("4 clients that gave up on a hung stdio route still hold %d bytes of max_inflight_body_bytes (%d) 5 s after leaving (only the connected caller's %d should be held); a 2 KB call to a healthy route got %d %v",
			held, inflight, holder, status, err)
	}
}

// spewUpstream is a Streamable HTTP MCP server with one tool, "spew",
// whose call answers on an SSE stream: n log notifications of size bytes
// each, then (once release is closed) the result.
func spewUpstream(t *testing.T, n, size int, sent chan<- struct{}, release <-chan struct{}) *httptest.Server {
	pad := strings.Repeat("y", size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     jsontext.Value `json:"id"`
			Method string         `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "spew-session")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch m.Method {
		case "initialize":
			reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"spew","version":"1"}}`)
		case "tools/list":
			reply(`{"tools":[{"name":"spew","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for i := range n {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"%d %s\"}}\n\n", i, pad)
				w.(http.Flusher).Flush()
			}
			tell(t, sent, struct{}{})
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", m.ID)
		default:
			if len(m.ID) == 0 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			reply(`{}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestVirtualServerBuffersWholeStream: a virtual server (aggregate.go)
// runs each call on an upstream through the gateway's own handler into a
// ResponseWriter that keeps everything written to it (buffered.body), and
// reads the answer out of that buffer when the call ends. The call's
// progress and log notifications are relayed to the client as they come —
// and also stay in the buffer, for as long as the call runs. An upstream
// that logs or reports progress at length (a long build, a crawl, or one
// that means harm) makes the gateway hold every byte of it: here 64 MiB
// the client has already been sent; a stream that never ends grows the
// gateway until it dies. Notifications relayed should be let go: what the
// gateway holds for a call in progress should not grow with its stream.
func TestVirtualServerBuffersWholeStream(t *testing.T) {
	const n, size = 256, 256 << 10
	sent, release := make(chan struct{}, 1), make(chan struct{})
	up := spewUpstream(t, n, size, sent, release)
	g, err := New(Options{Upstreams: []Upstream{{Name: "spew", URL: up.URL + "/mcp"}}, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow, Mode: intercept.ModeToolResult}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer func() { close(release); closeServed(t, gw, g) }()
	sid := ""
	do := func(ctx context.Context, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set(hdrSession, sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp := do(ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if sid = resp.Header.Get(hdrSession); resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
		resp := do(ctx, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	before := heapNow()
	var got atomic.Int64
	go func() {
		resp := do(ctx, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"spew","arguments":{}}}`)
		defer resp.Body.Close()
		buf := make([]byte, 1<<20)
		for {
			k, err := resp.Body.Read(buf)
			got.Add(int64(k))
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatal("the upstream's stream was not taken in 60 s")
	}
	for ctx.Err() == nil && got.Load() < int64(n*size) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	grew := int64(heapNow()) - int64(before)
	t.Logf("client received %d MiB; gateway heap grew %d MiB", got.Load()>>20, grew>>20)
	if got.Load() < int64(n*size) {
		t.Fatalf("the client got %d of the %d bytes of log its call's upstream sent", got.Load(), n*size)
	}
	if grew > 16<<20 {
		t.Fatalf("a call in progress through a virtual server holds %d MiB after its upstream streamed %d MiB of log notifications, all of which the client already has", grew>>20, (n*size)>>20)
	}
}

// TestIdleConnectionsNeverEnd: session_idle_timeout ends idle sessions
// ("sessions a client leaked end with the idle timeout", limits.go), and
// /ws and /sse connections count as sessions against max_sessions, the
// per-agent and per-address shares and a stdio route's max_children. But
// only the Streamable HTTP session table is reaped: a /ws or /sse
// connection that carries nothing at all keeps its places for as long as
// its socket stays open. A client that leaks connections, or keeps 16
// idle ones on a stdio route, holds them (and that route's every child)
// for good. An idle connection should end with the idle timeout as an
// idle session does, giving its places back.
func TestIdleConnectionsNeverEnd(t *testing.T) {
	for _, kind := range []string{"websocket", "sse"} {
		t.Run(kind, func(t *testing.T) {
			// One session per agent and address; idle ones end after 1 s.
			f := newFixture(t, allowEcho, Options{MaxSessions: 10, SessionIdleTimeout: time.Second})
			base := f.gw.URL
			var d transport.Dialer = &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/demo"}
			if kind == "sse" {
				d = &transport.SSEDialer{URL: base + "/sse/demo"}
			}
			dialConn(t, d) // initialized, then idle
			deadline := time.Now().Add(6 * time.Second)
			for {
				status, _, body := postInitializeAs(t, clientFrom("127.0.0.1"), base+"/mcp/demo", "later")
				if status == http.StatusOK {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("6 s after a %s connection went idle (session_idle_timeout 1s), it still holds its place: initialize from its address got %d %.200s",
						kind, status, body)
				}
				time.Sleep(250 * time.Millisecond)
			}
		})
	}
}

// silentUpstream is an in-process stdio upstream that answers initialize
// and ping and nothing else, keeping nothing of what it reads; with
// listWhenCancelled, it answers a tools/list (send_email and echo) once
// the list is cancelled, as a server that ignores cancellations does.
type silentUpstream struct{ listWhenCancelled bool }

func (s silentUpstream) Dial(ctx context.Context) (transport.Conn, error) {
	toUp, fromGW := io.Pipe()
	toGW, fromUp := io.Pipe()
	out := make(chan []byte, 64)
	go func() {
		defer close(out)
		br := bufio.NewReaderSize(toUp, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var r reqView
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			if s.listWhenCancelled && r.Method == "notifications/cancelled" {
				var c struct {
					Params struct {
						RequestID jsontext.Value `json:"requestId"`
					} `json:"params"`
				}
				if json.Unmarshal(line, &c) == nil && len(c.Params.RequestID) > 0 {
					out <- []byte(`{"jsonrpc":"2.0","id":` + string(c.Params.RequestID) + `,"result":{"tools":[{"name":"send_email","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}}`)
				}
			}
			if len(r.ID) == 0 {
				continue
			}
			switch r.Method {
			case "initialize":
				out <- []byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"silent","version":"1"}}}`)
			case "ping":
				out <- []byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{}}`)
			}
		}
	}()
	go func() {
		defer fromUp.Close()
		for a := range out {
			if _, err := fromUp.Write(append(a, '\n')); err != nil {
				return
			}
		}
	}()
	return &pipeConn{Conn: transport.NewStdioConn(toGW, fromGW, nil), w: fromGW}, nil
}

// TestConnOutstandingRequestsUnbounded: a /ws (or /sse) connection keeps,
// for every request it forwards, the request's id until the upstream
// answers (relay.pending), with no bound on how many: a client may send
// requests as fast as it likes on one connection, and a JSON-RPC id may
// be a string of any length. Against an upstream that is slow or does
// not answer a tool, 2,000 calls with 32 KiB ids make the gateway hold
// 64 MiB for one connection, and nothing ends them but the upstream's
// answers or the connection's end. Requests outstanding on a connection
// should be bounded (refused with an error past the bound, as a
// virtual server's relayed requests are: maxPendingAsks), in count and
// bytes.
func TestConnOutstandingRequestsUnbounded(t *testing.T) {
	g, base := startScriptedGateway(t, nil, Options{})
	g.routes["u"].dialer = silentUpstream{}
	cc := dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Read everything the gateway sends, until the ping's answer.
	synced := make(chan struct{})
	go func() {
		for {
			b, err := cc.c.Read(ctx)
			if err != nil {
				return
			}
			if bytes.Contains(b, []byte(`"id":"sync"`)) {
				close(synced)
				return
			}
		}
	}()
	before := heapNow()
	const n, idLen = 2000, 32 << 10
	pad := strings.Repeat("i", idLen)
	for i := range n {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d-%s","method":"tools/call","params":{"name":"echo","arguments":{}}}`, i, pad)
		if err := cc.c.Write(ctx, []byte(msg)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := cc.c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("no answer to the ping after the calls in 60 s")
	}
	grew := int64(heapNow()) - int64(before)
	t.Logf("%d unanswered calls with %d KiB ids on one connection: the gateway holds %d MiB more", n, idLen>>10, grew>>20)
	if grew > 16<<20 {
		t.Fatalf("one /ws connection with %d unanswered requests (ids of %d KiB) makes the gateway hold %d MiB: nothing bounds the requests outstanding on a connection",
			n, idLen>>10, grew>>20)
	}
}

// TestStalledClientStopsReaper: on a bridged route (stdio here) the
// session's upstream reader hands each message to the client's stream and
// waits while the client does not read (stream.deliver). A client whose
// GET stream takes a long run of messages (log, here sent after a call's
// answer) and that stops reading its socket without closing it leaves
// that reader waiting for good. (A stalled answer to a POST is a call in
// flight, which keeps its session from going idle:
// TestAttackIdleSessionCallInFlightForgets; a GET stream does not.)
// Once the session is idle, the reaper takes it out of the table and ends it:
// endSession → bridgeState.close, which waits for the reader to return —
// forever. The reaper is one goroutine: from then on no idle session of
// any client, on any route, is ever ended, so their places in
// max_sessions and their stdio children are never given back, and the
// gateway's Close hangs too. Ending a session should not wait on a client
// that does not read: closing it should free the reader.
func TestStalledClientStopsReaper(t *testing.T) {
	big := strings.Repeat("z", 64<<10)
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
			return nil
		}
		switch r.Method {
		case "initialize":
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}`)}
		case "tools/call":
			out := [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`)}
			for i := range 400 { // after the answer: to the GET stream
				out = append(out, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%d %s"}}`, i, big)))
			}
			return out
		}
		return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{}}`)}
	}}
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}, SessionIdleTimeout: time.Second},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.routes["u"].dialer = up
	srv := httptest.NewServer(g.Handler())
	closed := make(chan struct{})
	defer func() {
		srv.Close()
		go func() { g.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("the gateway's Close did not return in 10 s")
		}
	}()
	url := srv.URL + "/mcp/u"
	status, hdr, body := postInitializeAs(t, clientFrom("127.0.0.1"), url, "stalls")
	if status != http.StatusOK {
		t.Fatalf("initialize: %d %s", status, body)
	}
	sid := hdr.Get(hdrSession)
	// The stalled client: a GET stream on a raw connection that is never
	// read.
	addr := strings.TrimPrefix(srv.URL, "http://")
	raddr, _ := net.ResolveTCPAddr("tcp", addr)
	conn, err := net.DialTCP("tcp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // before the deferred Close above: it unblocks the gateway
	conn.SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /mcp/u HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n\r\n", addr, sid)
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil { // the stream is open
		t.Fatal(err)
	}
	hdrs := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"}
	if _, _, body := post(t, url, hdrs, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`); !strings.Contains(body, `"ok"`) {
		t.Fatalf("the call: %s", body)
	}
	time.Sleep(1500 * time.Millisecond) // the stalled session is idle now, and reaped
	// Another client's session, which goes idle at once.
	status, _, body = postInitializeAs(t, clientFrom("127.0.0.1"), url, "idle")
	if status != http.StatusOK {
		t.Fatalf("initialize of the idle session: %d %s", status, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.sessions.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle session (session_idle_timeout 1s) still in the table 5 s later: the reaper is stuck ending a session whose client stopped reading")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

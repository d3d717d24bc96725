package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip (any 127.x.y.z reaches the listener on Linux).
// Every loopback address is one client to the gateway (throttle.Client):
// a test playing several clients names them through a trusted proxy
// (proxied).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// loopbackProxy is the trusted_proxies of a test that plays several
// clients on one machine: 127.0.0.1 is a proxy naming them (proxied).
var loopbackProxy = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// proxied returns an HTTP client whose requests come from 127.0.0.1 with
// an X-Forwarded-For naming ip: the client ip (192.0.2.N, say) to a
// gateway whose trusted_proxies are loopbackProxy.
func proxied(ip string) *http.Client {
	return &http.Client{Transport: forwarding(ip)}
}

// forwarding is the transport of proxied: its X-Forwarded-For.
type forwarding string

func (f forwarding) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", string(f))
	return clientFrom("127.0.0.1").Transport.RoundTrip(r)
}

// postInitializeAs sends a 2025-11-25 initialize for agent from c and returns
// the response.
func postInitializeAs(t *testing.T, c *http.Client, url, agent string) (int, http.Header, string) {
	t.Helper()
	return postInitializeWith(t, c, url, agent, nil)
}

// postInitializeWith is postInitializeAs with the headers hdr too.
func postInitializeWith(t *testing.T, c *http.Client, url, agent string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + agent + `","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// wantLimited checks a refusal: status, a Retry-After, and a JSON-RPC
// error naming the limit's config key.
func wantLimited(t *testing.T, what string, status int, hdr http.Header, body string, wantStatus int, key string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: got %d %s, want %d", what, status, body, wantStatus)
	}
	if hdr.Get("Retry-After") == "" {
		t.Errorf("%s: no Retry-After header", what)
	}
	errorCode(t, body)
	if !strings.Contains(body, key) {
		t.Errorf("%s: error %s does not name %s", what, body, key)
	}
}

// TestSessionFloodDoesNotLockOutOthers floods initializes from one client
// and checks that it is refused (429, Retry-After, the limit named) once
// past its share, while another agent from another address still gets a
// session: one client can no longer fill the whole table.
func TestSessionFloodDoesNotLockOutOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// agent and ip of the i-th flooding initialize
		agent, ip func(i int) string
		key       string
	}{
		{"one agent, one address", func(int) string { return "flood" }, func(int) string { return "192.0.2.1" }, "max_sessions_per_"},
		{"rotating names, one address", func(i int) string { return fmt.Sprintf("flood-%d", i) }, func(int) string { return "192.0.2.1" }, "max_sessions_per_client"},
		{"one name, many addresses", func(int) string { return "flood" }, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) }, "max_sessions_per_agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// MaxSessions 40: each agent and each address may hold a tenth.
			f := newFixture(t, allowEcho, Options{MaxSessions: 40, TrustedProxies: loopbackProxy})
			url := f.gw.URL + "/mcp/demo"
			clients := map[string]*http.Client{}
			ok := 0
			for i := range 40 {
				c := clients[tc.ip(i)]
				if c == nil {
					c = proxied(tc.ip(i))
					clients[tc.ip(i)] = c
				}
				status, hdr, body := postInitializeAs(t, c, url, tc.agent(i))
				if status == http.StatusOK {
					ok++
					continue
				}
				wantLimited(t, "flooding initialize", status, hdr, body, http.StatusTooManyRequests, tc.key)
			}
			if ok != 4 {
				t.Errorf("flooding sessions admitted: got %d, want 4", ok)
			}
			status, _, body := postInitializeAs(t, proxied("192.0.2.2"), url, "victim")
			if status != http.StatusOK {
				t.Fatalf("another agent from another address: got %d %s, want 200", status, body)
			}
		})
	}
}

// TestSessionLimitReleasedOnDelete checks that ending a session frees its
// place: an agent at its limit that DELETEs a session can start another.
func TestSessionLimitReleasedOnDelete(t *testing.T) {
	f := newFixture(t, allowEcho, Options{MaxSessions: 10}) // one per agent and address
	url := f.gw.URL + "/mcp/demo"
	c := clientFrom("127.0.0.1")
	status, hdr, body := postInitializeAs(t, c, url, "a")
	if status != http.StatusOK {
		t.Fatalf("first initialize: got %d %s", status, body)
	}
	status, h2, body := postInitializeAs(t, c, url, "a")
	wantLimited(t, "second initialize", status, h2, body, http.StatusTooManyRequests, "max_sessions_per_")
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, _, body := postInitializeAs(t, c, url, "a"); status != http.StatusOK {
		t.Fatalf("initialize after DELETE: got %d %s, want 200", status, body)
	}
}

// TestConnSessionsCounted checks that /ws and /sse connections count as
// sessions: while one is open from an address at its limit, an initialize
// from that address is refused; once it closes, the place is free again.
// A connection over the limit is refused before the upgrade or stream.
func TestConnSessionsCounted(t *testing.T) {
	for _, kind := range []string{"websocket", "sse"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, allowEcho, Options{MaxSessions: 10}) // one per agent and address
			base := f.gw.URL
			wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws/demo"
			var d transport.Dialer = &transport.WSDialer{URL: wsURL}
			if kind == "sse" {
				d = &transport.SSEDialer{URL: base + "/sse/demo"}
			}
			cc := dialConn(t, d)
			status, hdr, body := postInitializeAs(t, clientFrom("127.0.0.1"), base+"/mcp/demo", "other")
			wantLimited(t, "initialize beside an open "+kind+" session", status, hdr, body, http.StatusTooManyRequests, "max_sessions_per_client")

			// A second connection from the same address is refused outright.
			var resp *http.Response
			var err error
			if kind == "sse" {
				resp, err = http.Get(base + "/sse/demo")
				if err == nil && resp.StatusCode == http.StatusOK {
					resp.Body.Close()
					t.Fatalf("second sse connection: got a stream, want 429")
				}
			} else {
				var ws *websocket.Conn
				ws, resp, err = websocket.DefaultDialer.Dial(wsURL, http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
				if err == nil {
					ws.Close()
					t.Fatalf("second websocket connection: accepted, want 429")
				}
			}
			if resp == nil {
				t.Fatalf("second %s connection: %v, want an HTTP 429", kind, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantLimited(t, "second "+kind+" connection", resp.StatusCode, resp.Header, string(b), http.StatusTooManyRequests, "max_sessions_per_client")

			cc.c.Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				status, _, body := postInitializeAs(t, clientFrom("127.0.0.1"), base+"/mcp/demo", "after")
				if status == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("initialize after the %s connection closed: got %d %s, want 200", kind, status, body)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestConnAgentLimit checks that a /ws connection counts against the agent
// its initialize names: a second connection for the same agent, from
// another address, has its initialize refused with an error naming
// max_sessions_per_agent, and the connection ends.
func TestConnAgentLimit(t *testing.T) {
	f := newFixture(t, allowEcho, Options{MaxSessions: 10, TrustedProxies: loopbackProxy}) // one per agent and address
	wsURL := "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/demo"
	dialConn(t, &transport.WSDialer{URL: wsURL}) // agent "conn", from 127.0.0.1
	d := websocket.Dialer{Subprotocols: []string{"mcp"}}
	ws, _, err := d.Dial(wsURL, http.Header{"X-Forwarded-For": {"192.0.2.9"}})
	if err != nil {
		t.Fatalf("a connection from another address: %v", err)
	}
	defer ws.Close()
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conn","version":"1"}}}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(init)); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("reading the answer to initialize: %v", err)
	}
	if code := errorCode(t, string(b)); code != intercept.CodeLimitExceeded || !strings.Contains(string(b), "max_sessions_per_agent") {
		t.Fatalf("initialize of a second session for the agent: got %s, want error %d naming max_sessions_per_agent", b, intercept.CodeLimitExceeded)
	}
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Errorf("the refused connection stays open; want it closed")
	}
}

// countingStdio writes a script that appends its pid to a file, then runs
// the demo server over stdio, and returns the script and the file.
func countingStdio(t *testing.T) (script, pids string) {
	t.Helper()
	bin := buildDemoServer(t)
	dir := t.TempDir()
	pids = filepath.Join(dir, "pids")
	script = filepath.Join(dir, "demo-stdio")
	src := "#!/bin/sh\necho $$ >> '" + pids + "'\nexec '" + bin + "' -transport stdio\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, pids
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestStdioChildrenBounded opens more 2025-era sessions on a stdio route
// than its max_children (default 16): the ones over the bound get 503 with
// Retry-After and an error naming max_children, and no process is started
// for them. 2026-07-28 stateless requests still work, over their one
// shared child, and ending a session frees a place.
func TestStdioChildrenBounded(t *testing.T) {
	script, pids := countingStdio(t)
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: script}}})
	url := f.gw.URL + "/mcp/stdio"
	var sids []string
	for i := range 24 {
		status, hdr, body := postInitializeAs(t, clientFrom(fmt.Sprintf("127.0.2.%d", i+1)), url, fmt.Sprintf("agent-%d", i))
		if status == http.StatusOK {
			sids = append(sids, hdr.Get("Mcp-Session-Id"))
			continue
		}
		wantLimited(t, "initialize over max_children", status, hdr, body, http.StatusServiceUnavailable, "max_children")
	}
	if got := countLines(t, pids); got != 16 {
		t.Errorf("stdio children started for 24 sessions: got %d, want 16", got)
	}
	if len(sids) != 16 {
		t.Errorf("sessions admitted: got %d, want 16", len(sids))
	}
	status, _, body := post(t, url, modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"shared"}`))
	if status != 200 || !strings.Contains(body, "Echo: shared") {
		t.Fatalf("2026-07-28 call beside full sessions: got %d %s, want 200", status, body)
	}
	if got := countLines(t, pids); got != 17 {
		t.Errorf("children after a stateless call: got %d, want 17 (16 sessions and the shared one)", got)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, _, body := postInitializeAs(t, clientFrom("127.0.3.1"), url, "late"); status != http.StatusOK {
		t.Fatalf("initialize after a DELETE freed a child: got %d %s, want 200", status, body)
	}
}

// TestInflightBodyBytesBounded sends many large bodies at once to an
// upstream that holds every call it gets: the gateway lets no more bodies
// through than fit in max_inflight_body_bytes (16 × max_body_bytes by
// default); the rest wait briefly and get 503 with Retry-After.
func TestInflightBodyBytesBounded(t *testing.T) {
	const maxBody = 64 << 10
	const size = 60 << 10
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			var held, peak atomic.Int64
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				m, err := intercept.DecodeMessage(b)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				n := held.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				held.Add(-1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, m.ID)
			}))
			defer up.Close()
			defer func() {
				select {
				case <-release:
				default:
					close(release)
				}
			}()
			g, err := New(Options{MaxBodyBytes: maxBody, Upstreams: []Upstream{{Name: "up", URL: up.URL}}},
				&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			defer closeServed(t, gw, g)

			const n = 40
			msg := modernCall(1, "echo", `{"message":"`+strings.Repeat("x", size)+`"}`)
			var refused atomic.Int64
			var wg sync.WaitGroup
			statuses := make(chan int, n)
			for range n {
				wg.Go(func() {
					var rd io.Reader = strings.NewReader(msg)
					if chunked {
						rd = io.MultiReader(rd) // hides the length: sent chunked
					}
					req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/up", rd)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					for k, v := range modernHeaders("tools/call", "echo") {
						req.Header.Set(k, v)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						statuses <- 0
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable {
						if resp.Header.Get("Retry-After") == "" {
							t.Error("503 without Retry-After")
						}
						refused.Add(1)
					}
					statuses <- resp.StatusCode
				})
			}
			deadline := time.Now().Add(15 * time.Second)
			for held.Load()+refused.Load() < n {
				if time.Now().After(deadline) {
					t.Fatalf("held %d, refused %d of %d after 15s", held.Load(), refused.Load(), n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			close(release)
			wg.Wait()
			close(statuses)
			bound := int64(16 * maxBody / size)
			if p := peak.Load(); p > bound {
				t.Errorf("bodies in flight at once: got %d, want at most %d (%d bytes each, bound %d)", p, bound, size, 16*maxBody)
			}
			if refused.Load() == 0 {
				t.Errorf("no request was refused; want 503s for those over the bound")
			}
			// A handler gives its bytes back just after its client has the answer.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				g.bodies.mu.Lock()
				gHeld, gPeak := g.bodies.held, g.bodies.peak
				g.bodies.mu.Unlock()
				if gPeak > 16*maxBody {
					t.Errorf("body bytes held by the gateway at once: got %d, want at most %d", gPeak, 16*maxBody)
				}
				if gHeld == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("body bytes still held after every request ended: %d", gHeld)
				}
			}
			for s := range statuses {
				if s != http.StatusOK && s != http.StatusServiceUnavailable {
					t.Errorf("status %d, want 200 or 503", s)
				}
			}
		})
	}
}

// TestReaperPaced ends hundreds of idle sessions at once and checks that
// their upstream DELETEs arrive a few at a time, every one of them.
func TestReaperPaced(t *testing.T) {
	const sessions = 300
	var cur, peak, total atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			http.Error(w, "DELETE only", http.StatusMethodNotAllowed)
			return
		}
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond) // the upstream's work
		cur.Add(-1)
		total.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer up.Close()
	g, err := New(Options{SessionIdleTimeout: 50 * time.Millisecond, Upstreams: []Upstream{{Name: "up", URL: up.URL}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := range sessions {
		if err := g.sessions.add(&session{id: newSessionID(), route: "up", upstreamID: fmt.Sprint("up-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for total.Load() < sessions {
		if ctx.Err() != nil {
			t.Fatalf("upstream DELETEs after 20s: got %d, want %d", total.Load(), sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := peak.Load(); p > 8 {
		t.Errorf("concurrent upstream DELETEs: got %d, want at most 8", p)
	}
}

// TestLimitsAdmit walks the session counts: each share refuses with 429
// and its key, a full gateway with 503, a released lease frees its place,
// and an agent bound late (a connection's initialize) counts like one
// known at once.
func TestLimitsAdmit(t *testing.T) {
	l := newLimits(&Options{MaxSessions: 3, MaxSessionsPerAgent: 2, MaxSessionsPerClient: 2})
	refused := func(err error, status int, key string) {
		t.Helper()
		le, ok := asLimitError(err)
		if !ok || le.status != status || le.key != key || le.retryAfter <= 0 {
			t.Fatalf("got %v, want a %d refusal naming %s with a retry time", err, status, key)
		}
	}
	a1, err := l.admit("websocket", "", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := a1.bindAgent("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.admit("streamable-http", "a", "10.0.0.2"); err != nil {
		t.Fatal(err)
	}
	_, err = l.admit("streamable-http", "a", "10.0.0.3")
	refused(err, http.StatusTooManyRequests, "max_sessions_per_agent")
	c1, err := l.admit("sse", "", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	refused(c1.bindAgent("a"), http.StatusTooManyRequests, "max_sessions_per_agent")
	_, err = l.admit("sse", "b", "10.0.0.1")
	refused(err, http.StatusTooManyRequests, "max_sessions_per_client")
	_, err = l.admit("sse", "b", "10.0.0.4")
	refused(err, http.StatusServiceUnavailable, "max_sessions")
	a1.release()
	a1.release() // a second release gives nothing back twice
	if _, err := l.admit("sse", "a", "10.0.0.5"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	refused(func() error { _, err := l.admit("sse", "c", "10.0.0.6"); return err }(), http.StatusServiceUnavailable, "max_sessions")
}

func TestClientAddr(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:5000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
	} {
		if got := clientAddr(&http.Request{RemoteAddr: tc.remote}); got != tc.want {
			t.Errorf("clientAddr(%q): got %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestTrustedProxySessions: max_sessions_per_client counts the client a
// trusted proxy forwards for, not the proxy (before, every client behind
// it shared one allowance), and from any other peer X-Forwarded-For is
// not believed (a client rotating it is still its address).
func TestTrustedProxySessions(t *testing.T) {
	f := newFixture(t, allowEcho, Options{MaxSessions: 10, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}) // one per address
	url := f.gw.URL + "/mcp/demo"
	initFor := func(c *http.Client, xff, agent string) (int, http.Header, string) {
		t.Helper()
		return postInitializeWith(t, c, url, agent, map[string]string{"X-Forwarded-For": xff})
	}
	proxy := clientFrom("127.0.0.1")
	if status, _, body := initFor(proxy, "203.0.113.1", "a"); status != http.StatusOK {
		t.Fatalf("first client behind the proxy: %d %s", status, body)
	}
	if status, _, body := initFor(proxy, "203.0.113.2", "b"); status != http.StatusOK {
		t.Fatalf("second client behind the proxy: %d %s, want its own allowance", status, body)
	}
	status, hdr, body := initFor(proxy, "198.51.100.9, 203.0.113.1", "c")
	wantLimited(t, "the first client again, its own claim before the proxy's", status, hdr, body, http.StatusTooManyRequests, "max_sessions_per_client")

	direct := clientFrom("127.0.0.5")
	if status, _, body := initFor(direct, "203.0.113.3", "d"); status != http.StatusOK {
		t.Fatalf("a client reaching the gateway directly: %d %s", status, body)
	}
	status, hdr, body = initFor(direct, "203.0.113.4", "e")
	wantLimited(t, "the direct client claiming another address", status, hdr, body, http.StatusTooManyRequests, "max_sessions_per_client")
}

package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// identityPolicy is examples/sluice.yaml's route rule, scoped to the
// agent: after an agent reads a sensitive document, its network calls are
// denied, in this session and every other.
const identityPolicy = `
policy:
  default: allow
  result_mode: tool_result
  tool_classes:
    read_document: [source:local, source:sensitive]
    web_search: [sink:network]
  route_rules:
    - id: no-network-after-sensitive-read
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network, sink:external]}
      scope: agent
      window: 24h
      reason: no network calls after reading a sensitive document
`

// logBuffer keeps the gateway's log lines for a test to read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// identityFixture serves the demo server over HTTP as route "demo" (and
// any upstreams in opts) behind identityPolicy, logging to the returned
// buffer.
func identityFixture(t *testing.T, opts Options) (*fixture, *logBuffer) {
	t.Helper()
	p, err := policy.Compile([]byte(identityPolicy), "identity.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	opts.Upstreams = append(opts.Upstreams, Upstream{Name: "demo", URL: up.URL + "/mcp"})
	logs := &logBuffer{}
	g, err := New(opts, &intercept.Interceptor{Decider: p}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	return &fixture{gw: gw, upstream: up, rec: rec, g: g}, logs
}

func initializeAs(id int, name string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, id, name)
}

func readDocument(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/docs/handbook.md"}}}`, id)
}

// webSearch is a web_search call for query with the given params._meta
// members (raw JSON, may be empty).
func webSearch(id int, query, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"web_search","arguments":{"query":%q},"_meta":{%s}}}`, id, query, meta)
}

func clientMeta(name string) string {
	return `"io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1"}`
}

const meta2026 = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

// routeDenied reports whether a response is the route rule's denial.
func routeDenied(body string) bool {
	return strings.Contains(body, `"status":"denied"`) && strings.Contains(body, "no-network-after-sensitive-read")
}

// openSession initializes a 2025-11-25 session on url as the client name
// with the extra headers and returns the headers of its later requests.
func openSession(t *testing.T, url, name string, extra map[string]string) map[string]string {
	t.Helper()
	hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	for k, v := range extra {
		hdr[k] = v
	}
	status, h, body := post(t, url, hdr, initializeAs(0, name))
	if status != 200 || h.Get(hdrSession) == "" {
		t.Fatalf("initialize as %s: got %d %s", name, status, body)
	}
	hdr[hdrSession] = h.Get(hdrSession)
	post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return hdr
}

func with(hdr map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(hdr)+len(kv)/2)
	for k, v := range hdr {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestAgentFixedInHTTPSession: in a 2025-11-25 session, neither _meta
// (a 2026-07-28 protocol version, a client name) nor a second initialize
// changes the agent or the protocol version: a request that claims
// another agent is answered as for an unknown session, one that switches
// version or initializes again is refused, none reaches the upstream, and
// the agent-scoped route rule keeps holding. Over an HTTP upstream and a
// bridged stdio one.
func TestAgentFixedInHTTPSession(t *testing.T) {
	bin := buildDemoServer(t)
	f, logs := identityFixture(t, Options{Upstreams: []Upstream{{Name: "stdio", Command: bin, Args: []string{"-transport", "stdio"}}}})
	for _, route := range []string{"demo", "stdio"} {
		t.Run(route, func(t *testing.T) {
			url := f.gw.URL + "/mcp/" + route
			hdr := openSession(t, url, "alice-"+route, nil)
			if status, _, body := post(t, url, hdr, readDocument(1)); status != 200 || !strings.Contains(body, "Handbook") {
				t.Fatalf("read_document: got %d %s", status, body)
			}
			modern := with(hdr, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "web_search")
			for _, tc := range []struct {
				name   string
				hdr    map[string]string
				body   string
				status int
				want   string // in the error message
			}{
				{"2026 meta as another client", modern, webSearch(2, "q-switch", meta2026+","+clientMeta("mallory")), 404, "session not found"},
				{"2026 meta, no client", modern, webSearch(3, "q-version", meta2026), 400, "protocol version of a session cannot change"},
				{"meta client only", hdr, webSearch(4, "q-client", clientMeta("mallory")), 404, "session not found"},
				{"initialize as another client", hdr, initializeAs(5, "mallory"), 404, "session not found"},
				{"initialize again", hdr, initializeAs(6, "alice-"+route), 400, "already initialized"},
				{"batch claiming another client", hdr, `[` + webSearch(7, "q-batch", clientMeta("mallory")) + `]`, 404, "session not found"},
			} {
				status, _, body := post(t, url, tc.hdr, tc.body)
				// A session refused is 404 with the reason as text
				// (writeSessionGone); the rest, a JSON-RPC error.
				if status != tc.status || status != http.StatusNotFound && errorCode(t, body) != intercept.CodeInvalidRequest || !strings.Contains(body, tc.want) {
					t.Errorf("%s: got %d %s, want %d with -32600 %q", tc.name, status, body, tc.status, tc.want)
				}
			}
			if route == "demo" {
				for _, q := range []string{"q-switch", "q-version", "q-client", "mallory", "q-batch"} {
					if f.upstreamSaw(q) {
						t.Errorf("a refused request (%s) reached the upstream", q)
					}
				}
			}
			// The session's own client, same name in _meta, is still its agent.
			status, _, body := post(t, url, hdr, webSearch(8, "q-after", clientMeta("alice-"+route)))
			if status != 200 || !routeDenied(body) {
				t.Errorf("web_search after read_document: got %d %s, want the route rule's denial", status, body)
			}
		})
	}
	if l := logs.String(); !strings.Contains(l, "agent=alice-demo") || !strings.Contains(l, "claimed=mallory") {
		t.Errorf("log: got %q, want a warning naming the session's agent and the claimed one", l)
	}
}

// TestStatelessAgentHeaderWins: a 2026-07-28 request is identified per
// request, the agent header taking precedence over _meta's client name.
func TestStatelessAgentHeaderWins(t *testing.T) {
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent-Id"})
	url := f.gw.URL + "/mcp/demo"
	read := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/docs/handbook.md"},"_meta":{` + meta2026 + `,` + clientMeta("desk") + `}}}`
	if status, _, body := post(t, url, with(modernHeaders("tools/call", "read_document"), "X-Agent-Id", "alice"), read); status != 200 || !strings.Contains(body, "Handbook") {
		t.Fatalf("read_document: got %d %s", status, body)
	}
	status, _, body := post(t, url, with(modernHeaders("tools/call", "web_search"), "X-Agent-Id", "alice"), webSearch(2, "q", meta2026+","+clientMeta("other")))
	if status != 200 || !routeDenied(body) {
		t.Errorf("web_search by the same header, another client name: got %d %s, want the route rule's denial", status, body)
	}
}

// connOpener opens a relayed connection (/ws, /sse, or `wrap`'s stdio)
// with the agent header set to agent when not empty.
type connOpener func(t *testing.T, f *fixture, agent string) transport.Conn

func wsOpener(t *testing.T, f *fixture, agent string) transport.Conn {
	return dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/demo", Header: agentHeader(agent)})
}

func sseOpener(t *testing.T, f *fixture, agent string) transport.Conn {
	return dialWith(t, &transport.SSEDialer{URL: f.gw.URL + "/sse/demo", Header: agentHeader(agent)})
}

// stdioOpener serves one end of a pipe with ServeConn, as `sluice wrap`
// serves its stdin and stdout.
func stdioOpener(t *testing.T, f *fixture, _ string) transport.Conn {
	toGW, fromClient := io.Pipe()
	toClient, fromGW := io.Pipe()
	down := transport.NewStdioConn(toGW, fromGW, nil)
	done := make(chan error, 1)
	go func() { done <- f.g.ServeConn(context.Background(), "demo", down) }()
	c := transport.NewStdioConn(toClient, fromClient, nil)
	t.Cleanup(func() { fromClient.Close(); c.Close(); <-done })
	return c
}

func agentHeader(agent string) http.Header {
	if agent == "" {
		return nil
	}
	return http.Header{"X-Agent-Id": {agent}}
}

func dialWith(t *testing.T, d transport.Dialer) transport.Conn {
	t.Helper()
	c, err := d.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends msg on c and returns the answer with id.
func exchangeOn(t *testing.T, c transport.Conn, msg, id string) *intercept.Message {
	t.Helper()
	return (&connClient{c: c}).rpc(t, msg, id)
}

// startConn initializes c as the client name.
func startConn(t *testing.T, c transport.Conn, name string) {
	t.Helper()
	if m := exchangeOn(t, c, initializeAs(0, name), "0"); m.Kind != intercept.KindResponse {
		t.Fatalf("initialize: got %s", m.Raw)
	}
	if err := c.Write(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
}

func isRefusal(m *intercept.Message, want string) bool {
	return m.Kind == intercept.KindError && strings.Contains(string(m.Raw), `"code":-32600`) && strings.Contains(string(m.Raw), want)
}

// TestAgentFixedOnConnection: on a /ws, /sse or stdio (`wrap`)
// connection, a second initialize, a ping or a call whose _meta names
// another client, or a 2026-07-28 _meta in a 2025 session, is refused
// with -32600 and not forwarded; the connection's agent stays the one it
// started with, and the agent-scoped route rule keeps holding.
func TestAgentFixedOnConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		open connOpener
	}{{"websocket", wsOpener}, {"sse", sseOpener}, {"stdio", stdioOpener}} {
		t.Run(tc.name, func(t *testing.T) {
			f, logs := identityFixture(t, Options{})
			c := tc.open(t, f, "")
			startConn(t, c, "alice")
			if m := exchangeOn(t, c, readDocument(1), "1"); !strings.Contains(string(m.Result), "Handbook") {
				t.Fatalf("read_document: got %s", m.Raw)
			}
			for _, a := range []struct {
				name, msg, id, want string
			}{
				{"initialize again", initializeAs(2, "mallory"), "2", "agent of a session cannot change"},
				{"initialize again, same client", initializeAs(3, "alice"), "3", "already initialized"},
				{"ping as another client", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25",` + clientMeta("mallory") + `}}}`, "4", "agent of a session cannot change"},
				{"call as another client", webSearch(5, "q-client", clientMeta("mallory")), "5", "agent of a session cannot change"},
				{"2026 meta", webSearch(6, "q-version", meta2026), "6", "protocol version of a session cannot change"},
			} {
				if m := exchangeOn(t, c, a.msg, a.id); !isRefusal(m, a.want) {
					t.Errorf("%s: got %s, want -32600 %q", a.name, m.Raw, a.want)
				}
			}
			for _, q := range []string{"mallory", "q-client", "q-version"} {
				if f.upstreamSaw(q) {
					t.Errorf("a refused message (%s) reached the upstream", q)
				}
			}
			if m := exchangeOn(t, c, webSearch(7, "q-after", ""), "7"); !routeDenied(string(m.Raw)) {
				t.Errorf("web_search after read_document: got %s, want the route rule's denial", m.Raw)
			}
			if l := logs.String(); !strings.Contains(l, "agent=alice") || !strings.Contains(l, "claimed=mallory") {
				t.Errorf("log: got %q, want a warning naming the connection's agent and the claimed one", l)
			}
		})
	}
}

// TestAgentFixedOnModernConnection: a connection whose first request is
// a 2026-07-28 request takes its agent from that request's _meta; a later
// request naming another client is refused, and so is a second
// initialize or a 2026-07-28 request after the handshake.
func TestAgentFixedOnModernConnection(t *testing.T) {
	f, _ := identityFixture(t, Options{})
	c := wsOpener(t, f, "")
	read := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/docs/handbook.md"},"_meta":{` + meta2026 + `,` + clientMeta("alice") + `}}}`
	if m := exchangeOn(t, c, read, "1"); !strings.Contains(string(m.Result), "Handbook") {
		t.Fatalf("read_document: got %s", m.Raw)
	}
	if m := exchangeOn(t, c, webSearch(2, "q-switch", meta2026+","+clientMeta("mallory")), "2"); !isRefusal(m, "agent of a session cannot change") {
		t.Errorf("call as another client: got %s, want -32600", m.Raw)
	}
	if m := exchangeOn(t, c, webSearch(3, "q-same", meta2026+","+clientMeta("alice")), "3"); !routeDenied(string(m.Raw)) {
		t.Errorf("web_search by the same client: got %s, want the route rule's denial", m.Raw)
	}
	// A client whose server did not know 2026-07-28 falls back to the
	// handshake once, as the same agent; the session is then 2025-11-25.
	if m := exchangeOn(t, c, initializeAs(4, "mallory"), "4"); !isRefusal(m, "agent of a session cannot change") {
		t.Errorf("initialize as another client: got %s, want -32600", m.Raw)
	}
	startConn(t, c, "alice")
	for _, a := range []struct{ name, msg, id, want string }{
		{"initialize again", initializeAs(5, "alice"), "5", "already initialized"},
		{"2026 meta after the handshake", webSearch(6, "q-version", meta2026+","+clientMeta("alice")), "6", "protocol version of a session cannot change"},
	} {
		if m := exchangeOn(t, c, a.msg, a.id); !isRefusal(m, a.want) {
			t.Errorf("%s: got %s, want -32600 %q", a.name, m.Raw, a.want)
		}
	}
	if m := exchangeOn(t, c, webSearch(7, "q-after", ""), "7"); !routeDenied(string(m.Raw)) {
		t.Errorf("web_search after the handshake: got %s, want the route rule's denial", m.Raw)
	}
}

// TestAgentHeaderOnConnections: the agent header on the request that
// opens a /ws or /sse connection names its agent, whatever the client
// calls itself, so the agent's route rule spans its connections.
func TestAgentHeaderOnConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		open connOpener
	}{{"websocket", wsOpener}, {"sse", sseOpener}} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := identityFixture(t, Options{AgentHeader: "X-Agent-Id"})
			first := tc.open(t, f, "alice")
			startConn(t, first, "desk")
			if m := exchangeOn(t, first, readDocument(1), "1"); !strings.Contains(string(m.Result), "Handbook") {
				t.Fatalf("read_document: got %s", m.Raw)
			}
			second := tc.open(t, f, "alice")
			startConn(t, second, "other")
			if m := exchangeOn(t, second, webSearch(2, "q", ""), "2"); !routeDenied(string(m.Raw)) {
				t.Errorf("web_search by the same header on another connection: got %s, want the route rule's denial", m.Raw)
			}
			// The header fixes the agent: a client name in _meta changes nothing.
			if m := exchangeOn(t, second, webSearch(3, "q", clientMeta("mallory")), "3"); !routeDenied(string(m.Raw)) {
				t.Errorf("web_search with another _meta client name: got %s, want the route rule's denial", m.Raw)
			}
		})
	}
}

// openSSE opens /sse/demo with hdr and returns its message endpoint.
func openSSE(t *testing.T, f *fixture, hdr http.Header) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.gw.URL+"/sse/demo", nil)
	req.Header = hdr.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET /sse/demo: got %d", resp.StatusCode)
	}
	ev, err := transport.NewSSEReader(resp.Body).Next()
	if err != nil || ev.Event != "endpoint" {
		t.Fatalf("endpoint event: got %+v, %v", ev, err)
	}
	return f.gw.URL + string(ev.Data)
}

// TestSSEMessagesCarryTheOpenersHeader: every POST to an SSE session's
// message endpoint must carry the agent header value its GET had; another
// value, or none, is answered as for an unknown session.
func TestSSEMessagesCarryTheOpenersHeader(t *testing.T) {
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent-Id"})
	endpoint := openSSE(t, f, http.Header{"X-Agent-Id": {"alice"}})
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"another agent", map[string]string{"X-Agent-Id": "bob"}, 404},
		{"no header", nil, 404},
		{"the opener", map[string]string{"X-Agent-Id": "alice"}, 202},
	} {
		if status, _, body := post(t, endpoint, tc.hdr, initializeAs(1, "x")); status != tc.status {
			t.Errorf("%s: got %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
}

// TestAgentHeaderRequired: with agent_header_required, a request without
// the header is refused on every transport with an error naming it, and
// `wrap`'s stdio connection, which has no headers, cannot be served.
func TestAgentHeaderRequired(t *testing.T) {
	if _, err := New(Options{AgentHeaderRequired: true}, &intercept.Interceptor{}, nil); err == nil || !strings.Contains(err.Error(), "AgentHeader") {
		t.Errorf("AgentHeaderRequired without AgentHeader: got %v, want an error naming AgentHeader", err)
	}
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent-Id", AgentHeaderRequired: true})
	url := f.gw.URL + "/mcp/demo"
	call := modernCall(1, "echo", `{"message":"hi"}`)
	refused := func(name string, status int, body string) {
		t.Helper()
		if status != 400 || errorCode(t, body) != intercept.CodeInvalidRequest || !strings.Contains(body, "X-Agent-Id") {
			t.Errorf("%s without the header: got %d %s, want 400 -32600 naming X-Agent-Id", name, status, body)
		}
	}
	status, _, body := post(t, url, modernHeaders("tools/call", "echo"), call)
	refused("stateless call", status, body)
	status, _, body = post(t, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, initializeAs(0, "alice"))
	refused("initialize", status, body)
	if status, _, body := post(t, url, with(modernHeaders("tools/call", "echo"), "X-Agent-Id", "alice"), call); status != 200 || !strings.Contains(body, "Echo: hi") {
		t.Errorf("stateless call with the header: got %d %s", status, body)
	}
	hdr := openSession(t, url, "alice", map[string]string{"X-Agent-Id": "alice"})
	noAgent := with(hdr)
	delete(noAgent, "X-Agent-Id")
	status, _, body = post(t, url, noAgent, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	refused("POST in a session", status, body)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		status, body := do(t, method, url, noAgent)
		refused(method+" in a session", status, body)
	}
	status, body = do(t, http.MethodGet, f.gw.URL+"/sse/demo", nil)
	refused("GET /sse", status, body)
	status, body = do(t, http.MethodGet, f.gw.URL+"/ws/demo", nil)
	refused("GET /ws", status, body)
	endpoint := openSSE(t, f, http.Header{"X-Agent-Id": {"alice"}})
	status, _, body = post(t, endpoint, nil, initializeAs(0, "alice"))
	refused("POST to /sse", status, body)
	c := wsOpener(t, f, "alice")
	startConn(t, c, "desk")
	if m := exchangeOn(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ws"}}}`, "1"); !strings.Contains(string(m.Result), "Echo: ws") {
		t.Errorf("call over /ws with the header: got %s", m.Raw)
	}
	toGW, _ := io.Pipe()
	_, fromGW := io.Pipe()
	if err := f.g.ServeConn(t.Context(), "demo", transport.NewStdioConn(toGW, fromGW, nil)); !errors.Is(err, ErrAgentHeaderRequired) {
		t.Errorf("ServeConn: got %v, want ErrAgentHeaderRequired", err)
	}
}

// do sends a bodiless request and returns its status and body.
func do(t *testing.T, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if isEventStream(resp.Header) {
		return resp.StatusCode, "" // a stream opened: it would never end
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSessionIDOfAnotherAgent: a session id is of no use to another
// agent: its POSTs, GET stream and DELETE are answered as for an unknown
// session, and the session goes on for its owner.
func TestSessionIDOfAnotherAgent(t *testing.T) {
	f, logs := identityFixture(t, Options{AgentHeader: "X-Agent-Id"})
	url := f.gw.URL + "/mcp/demo"
	alice := openSession(t, url, "desk", map[string]string{"X-Agent-Id": "alice"})
	for _, other := range []struct {
		name string
		hdr  map[string]string
	}{
		{"another header", with(alice, "X-Agent-Id", "bob")},
		{"no header", func() map[string]string { h := with(alice); delete(h, "X-Agent-Id"); return h }()},
	} {
		status, _, body := post(t, url, other.hdr, webSearch(1, "q-stolen", ""))
		if status != 404 || !strings.Contains(body, "session not found") {
			t.Errorf("POST with %s: got %d %s, want 404", other.name, status, body)
		}
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			if status, body := do(t, method, url, other.hdr); status != 404 || !strings.Contains(body, "session not found") {
				t.Errorf("%s with %s: got %d %s, want 404", method, other.name, status, body)
			}
		}
	}
	if f.upstreamSaw("q-stolen") {
		t.Error("a call on a stolen session id reached the upstream")
	}
	if status, _, body := post(t, url, alice, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != 200 || !strings.Contains(body, "web_search") {
		t.Errorf("the owner's tools/list after the attempts: got %d %s", status, body)
	}
	if l := logs.String(); !strings.Contains(l, "agent=alice") || !strings.Contains(l, "claimed=bob") {
		t.Errorf("log: got %q, want a warning naming the session's agent and the claimed one", l)
	}
}

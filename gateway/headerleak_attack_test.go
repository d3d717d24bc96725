package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"
)

// The client's HTTP headers after a sensitive read (headers.go): route
// rule no-exfil closes web to agent raw, and its plain messages must not
// carry the secret to web in their headers.

// headerTap records the headers of every request an upstream receives.
type headerTap struct {
	next http.Handler
	mu   sync.Mutex
	seen []string      // "METHOD Name: value" lines, and "POST body: …"
	saw  chan struct{} // closed on the next request seen; nil: none waits
}

func (h *headerTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Method == http.MethodPost {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.mu.Lock()
	for k, vv := range r.Header {
		for _, v := range vv {
			h.seen = append(h.seen, r.Method+" "+k+": "+v)
		}
	}
	if body != nil {
		h.seen = append(h.seen, "POST body: "+string(body))
	}
	if h.saw != nil {
		close(h.saw)
		h.saw = nil
	}
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

// reset forgets what was seen.
func (h *headerTap) reset() {
	h.mu.Lock()
	h.seen = nil
	h.mu.Unlock()
}

// waitFor waits until a request of method has been seen.
func (h *headerTap) waitFor(t *testing.T, method string) {
	t.Helper()
	for {
		h.mu.Lock()
		for _, s := range h.seen {
			if strings.HasPrefix(s, method+" ") {
				h.mu.Unlock()
				return
			}
		}
		if h.saw == nil {
			h.saw = make(chan struct{})
		}
		saw := h.saw
		h.mu.Unlock()
		select {
		case <-saw:
		case <-t.Context().Done():
			t.Fatalf("no %s reached the upstream", method)
		}
	}
}

// leaked returns the headers (and bodies) seen holding mark.
func (h *headerTap) leaked(mark string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.seen {
		if strings.Contains(strings.ToLower(s), strings.ToLower(mark)) {
			out = append(out, s)
		}
	}
	return out
}

// has reports whether a header line equal to line (after the method) was seen.
func (h *headerTap) has(line string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.seen {
		if _, l, _ := strings.Cut(s, " "); l == line {
			return true
		}
	}
	return false
}

// headerGateway serves docs (the demo server) and web (an mcp-go server
// of web_search and lookup behind a headerTap) under carryPolicy, and a
// virtual server of both at /mcp. web passes X-Tenant (pass_headers).
func headerGateway(t *testing.T, opts Options) (gw *httptest.Server, g *Gateway, tap *headerTap) {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("web_search", mcp.WithString("query")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("results"), nil
	})
	s.AddTool(mcp.NewTool("lookup", mcp.WithString("query")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("looked up"), nil
	})
	tap = &headerTap{next: server.NewStreamableHTTPServer(s)}
	up := httptest.NewServer(tap)
	t.Cleanup(up.Close)
	opts.VirtualServers = []VirtualServer{{Upstreams: []string{"web"}}}
	gw, g = carryStack(t, opts, Upstream{Name: "web", URL: up.URL + "/mcp", PassHeaders: []string{"x-tenant"}})
	return gw, g, tap
}

// secretHeaders put mark in every header a client can send, in forms the
// gateway cannot vouch for.
func secretHeaders(mark string) map[string]string {
	return map[string]string{
		"X-Leak":               mark,
		"User-Agent":           "agent/" + mark,
		"Cookie":               "s=" + mark,
		"Baggage":              "leak=" + mark,
		"Traceparent":          "00-" + mark + "-00f067aa0ba902b7-01",
		"Tracestate":           "leak=" + mark,
		"X-Forwarded-For":      mark,
		"Referer":              "https://x.example/" + mark,
		"Accept-Language":      mark,
		"Mcp-Param-Leak":       mark,
		"Sec-Fetch-Site":       mark,
		"X-Mcp-Protocol-Level": mark,
	}
}

// request sends method to url with hdr and body (none when ""), and
// returns the status and body, reading at most until ctx ends.
func request(t *testing.T, ctx context.Context, method, url string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ""
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func withHdr(h map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(h)+len(kv)/2)
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestAttackHeadersPastRouteRule: once agent raw read a secret, its plain
// messages to the closed web upstream reached it with the secret in
// their HTTP headers: a custom header, User-Agent, Cookie, baggage, a
// malformed traceparent or tracestate, Mcp-Protocol-Version on a session,
// Last-Event-ID on the GET stream, on POST, GET and DELETE of a
// 2025-11-25 session, 2026-07-28 requests and the virtual server's. Also
// /ws and /sse relayed to web, whose own connection sends none of the
// client's headers.
func TestAttackHeadersPastRouteRule(t *testing.T) {
	gw, g, tap := headerGateway(t, Options{})
	web := gw.URL + "/mcp/web"
	sid := initialize(t, web) // before the read: web is open
	readSecret(t, gw.URL)
	tap.reset()
	// Not hex: a traceparent holding it is not W3C's (one in W3C form:
	// TestAttackTraceparentPastRouteRule).
	const mark = "SECRET-hr-salaries-7f3a"
	h := secretHeaders(mark)
	sess := withHdr(h, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")

	t.Run("2025 POST", func(t *testing.T) {
		tap.reset()
		for _, msg := range []string{`{"jsonrpc":"2.0","id":"p1","method":"ping"}`, `{"jsonrpc":"2.0","id":"p2","method":"tools/list"}`} {
			if st, body := request(t, t.Context(), http.MethodPost, web, sess, msg); st != 200 || !strings.Contains(body, `"result"`) {
				t.Fatalf("plain %s: got %d %s, want it answered", msg, st, body)
			}
		}
		if _, body := request(t, t.Context(), http.MethodPost, web, withHdr(sess, "Mcp-Protocol-Version", mark), `{"jsonrpc":"2.0","id":"p3","method":"ping"}`); !strings.Contains(body, `"result"`) {
			t.Fatalf("ping with a made-up Mcp-Protocol-Version: %s", body)
		}
		if l := tap.leaked(mark); len(l) > 0 {
			t.Errorf("the secret reached the closed upstream in headers: %q", l)
		}
	})
	t.Run("2025 GET", func(t *testing.T) {
		tap.reset()
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		request(t, ctx, http.MethodGet, web, withHdr(sess, "Accept", "text/event-stream", "Last-Event-ID", mark), "")
		if l := tap.leaked(mark); len(l) > 0 {
			t.Errorf("the secret reached the closed upstream in headers: %q", l)
		}
	})
	t.Run("2026 stateless", func(t *testing.T) {
		tap.reset()
		body := `{"jsonrpc":"2.0","id":"m1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		request(t, t.Context(), http.MethodPost, web, withHdr(h, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"), body)
		if l := tap.leaked(mark); len(l) > 0 {
			t.Errorf("the secret reached the closed upstream in headers: %q", l)
		}
	})
	t.Run("virtual", func(t *testing.T) {
		tap.reset()
		vsid := initialize(t, gw.URL+"/mcp")
		vh := withHdr(h, "Mcp-Session-Id", vsid, "Mcp-Protocol-Version", "2025-11-25",
			"Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Tracestate", "leak="+mark+strings.Repeat("x", 600))
		request(t, t.Context(), http.MethodPost, gw.URL+"/mcp", vh, `{"jsonrpc":"2.0","id":"v1","method":"tools/list"}`)
		if l := tap.leaked(mark); len(l) > 0 {
			t.Errorf("the secret reached the closed upstream in headers: %q", l)
		}
	})
	for _, tr := range []struct {
		name string
		dial func(gw string, h http.Header) transport.Dialer
	}{
		{"ws", func(gw string, h http.Header) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw, "http") + "/ws/web", Header: h}
		}},
		{"sse", func(gw string, h http.Header) transport.Dialer {
			return &transport.SSEDialer{URL: gw + "/sse/web", Header: h}
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			tap.reset()
			hh := http.Header{}
			for k, v := range h {
				hh.Set(k, v)
			}
			c := dialWith(t, tr.dial(gw.URL, hh))
			for _, m := range []string{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
				`{"jsonrpc":"2.0","id":1,"method":"ping"}`} {
				if err := c.Write(t.Context(), []byte(m)); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				if _, err := c.Read(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
			}
			if l := tap.leaked(mark); len(l) > 0 {
				t.Errorf("the secret reached the closed upstream in headers: %q", l)
			}
		})
	}
	t.Run("2025 DELETE", func(t *testing.T) {
		tap.reset()
		request(t, t.Context(), http.MethodDelete, web, sess, "")
		if l := tap.leaked(mark); len(l) > 0 {
			t.Errorf("the secret reached the closed upstream in headers: %q", l)
		}
	})
	if n := g.HeadersWithheld(); n == 0 {
		t.Error("no header counted as withheld")
	}
}

// TestClosedUpstreamLegitHeaders: what a legitimate client still sends.
// An upstream not closed gets the client's headers as before; a closed one
// gets the protocol's in their grammar, the gateway's User-Agent, and the
// operator's pass_headers as sent (and no traceparent, tracing being off:
// TestClosedUpstreamTraceLegit).
func TestClosedUpstreamLegitHeaders(t *testing.T) {
	gw, g, tap := headerGateway(t, Options{})
	web := gw.URL + "/mcp/web"
	sid := initialize(t, web)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", "X-Tenant": "acme", "X-Custom": "open-only",
		"User-Agent": "my-agent/1.0", "Traceparent": tp, "Tracestate": "congo=t61rcWkgMzE", "Accept": "application/json, text/event-stream"}
	ping := `{"jsonrpc":"2.0","id":"p","method":"ping"}`

	tap.reset()
	if _, body := request(t, t.Context(), http.MethodPost, web, h, ping); !strings.Contains(body, `"result"`) {
		t.Fatalf("ping: %s", body)
	}
	for _, line := range []string{"X-Custom: open-only", "User-Agent: my-agent/1.0", "X-Tenant: acme", "Traceparent: " + tp} {
		if !tap.has(line) {
			t.Errorf("open upstream: %q not passed on", line)
		}
	}
	if n := g.HeadersWithheld(); n != 0 {
		t.Errorf("open upstream: got %d headers withheld, want 0", n)
	}

	readSecret(t, gw.URL)
	tap.reset()
	if _, body := request(t, t.Context(), http.MethodPost, web, h, ping); !strings.Contains(body, `"result"`) {
		t.Fatalf("ping after the read: %s", body)
	}
	for _, line := range []string{"X-Tenant: acme", "User-Agent: " + gatewayUserAgent,
		"Mcp-Protocol-Version: 2025-11-25", "Accept: application/json, text/event-stream"} {
		if !tap.has(line) {
			t.Errorf("closed upstream: %q not passed on", line)
		}
	}
	if tap.has("X-Custom: open-only") || tap.has("User-Agent: my-agent/1.0") || tap.has("Tracestate: congo=t61rcWkgMzE") || tap.has("Traceparent: "+tp) {
		t.Error("closed upstream: got the client's own header, want it dropped (its traceparent the gateway's, none with tracing off)")
	}
	if n := g.HeadersWithheld(); n != 2 {
		t.Errorf("closed upstream: got %d headers withheld, want 2 (X-Custom, Tracestate)", n)
	}
}

// TestClosedLastEventID: a closed upstream gets a Last-Event-ID only if
// the gateway passed that event on to the session's client.
func TestClosedLastEventID(t *testing.T) {
	s := &session{}
	rt := &route{}
	get := func(id string) http.Header {
		r := httptest.NewRequest(http.MethodGet, "/mcp/web", nil)
		r.Header.Set("Last-Event-ID", id)
		dst := http.Header{}
		closedHeaders(dst, r, rt, s)
		return dst
	}
	if got := get("42").Get("Last-Event-ID"); got != "" {
		t.Errorf("an id never passed on: got %q sent, want none", got)
	}
	s.passedEvent("42")
	if got := get("42").Get("Last-Event-ID"); got != "42" {
		t.Errorf("an id passed on: got %q sent, want 42", got)
	}
	for i := range maxEventIDs {
		s.passedEvent(itoa(100 + i))
	}
	if got := get("42").Get("Last-Event-ID"); got != "" {
		t.Errorf("an id long forgotten: got %q sent, want none", got)
	}
}

// upstreamRequestAllocs is what upstreamRequest allocated for a POST with
// two client headers before it asked whether the upstream was closed: the
// request, its header map and URL, the copied values, the body reader…
// (10 until the route's URL went into the request's own).
const upstreamRequestAllocs = 9

// TestUpstreamRequestAllocs: asking whether the upstream is closed costs
// an open upstream's request no allocation, with route rules or without.
func TestUpstreamRequestAllocs(t *testing.T) {
	for _, tc := range []struct{ name, policy string }{
		{"no route rules", "default: allow\n"},
		{"route rules, not closed", carryPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.Compile([]byte(tc.policy), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(Options{Upstreams: []Upstream{{Name: "web", URL: "http://127.0.0.1:1/mcp"}}}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			rt := g.routes["web"]
			r := httptest.NewRequest(http.MethodPost, "/mcp/web", nil)
			r.Header.Set("User-Agent", "my-agent/1.0")
			r.Header.Set("X-Tenant", "acme")
			cc := intercept.CallContext{Upstream: "web", Agent: "raw", SessionID: "s"}
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			n := testing.AllocsPerRun(100, func() {
				if _, err := g.upstreamRequest(t.Context(), r, rt, nil, g.ic.Closed(t.Context(), cc), body); err != nil {
					t.Fatal(err)
				}
			})
			if n > upstreamRequestAllocs {
				t.Errorf("got %v allocations per request, want at most %d (as before the closed check)", n, upstreamRequestAllocs)
			}
		})
	}
}

// TestPassHeadersChecked: pass_headers cannot pass the agent's credential,
// a header the gateway writes, or anything to an upstream that gets no
// client headers.
func TestPassHeadersChecked(t *testing.T) {
	for _, tc := range []struct {
		up   Upstream
		want string
	}{
		{Upstream{Name: "u", URL: "http://x/mcp", PassHeaders: []string{"authorization"}}, "Authorization is never passed"},
		{Upstream{Name: "u", URL: "http://x/mcp", PassHeaders: []string{"X-Ok", "mcp-session-id"}}, "pass_headers[1]: Mcp-Session-Id is the gateway's"},
		{Upstream{Name: "u", URL: "http://x/mcp", PassHeaders: []string{"Mcp-Param-Region"}}, "the gateway's"},
		{Upstream{Name: "u", URL: "http://x/mcp", PassHeaders: []string{"bad header"}}, "not a header name"},
		{Upstream{Name: "u", URL: "ws://x/mcp", Transport: TransportWebSocket, PassHeaders: []string{"X-Tenant"}}, "only a streamable-http upstream"},
	} {
		_, err := New(Options{Upstreams: []Upstream{tc.up}}, &intercept.Interceptor{}, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error saying %q", tc.up.PassHeaders, err, tc.want)
		}
	}
}

// TestAttackTraceContextPastRouteRule: with tracing on, the gateway writes
// the trace context it read from the client (its span's, parented to the
// client's): the client's baggage and an overlong tracestate went to the
// closed upstream that way, whatever was copied.
func TestAttackTraceContextPastRouteRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tracer telemetry.Tracer
	}{
		{"not recording", telemetry.Nop()},
		{"recording", telemetry.NewTracer(sdktrace.NewTracerProvider())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, _, tap := headerGateway(t, Options{Tracer: tc.tracer})
			web := gw.URL + "/mcp/web"
			sid := initialize(t, web)
			readSecret(t, gw.URL)
			tap.reset()
			const mark = "SECRET-hr-salaries-7f3a"
			h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25",
				"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
				"Tracestate":  "leak=" + mark + strings.Repeat("x", 200) + ",b=" + strings.Repeat("y", 250) + ",c=" + strings.Repeat("z", 250),
				"Baggage":     "leak=" + mark}
			if _, body := request(t, t.Context(), http.MethodPost, web, h, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); !strings.Contains(body, `"result"`) {
				t.Fatalf("ping: %s", body)
			}
			if l := tap.leaked(mark); len(l) > 0 {
				t.Errorf("the secret reached the closed upstream in headers: %q", l)
			}
		})
	}
}

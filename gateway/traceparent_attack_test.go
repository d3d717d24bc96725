package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/telemetry"
)

// The client's trace context and a closed upstream (tracing.go): a W3C
// traceparent's trace-id and parent-id are 24 bytes of the client's
// choosing a request, in the traceparent header and in params._meta.
// After a sensitive read closes web to agent raw, web must get a trace
// context of the gateway's making, whether tracing is off, on without
// recording, or recording (its spans were children of the client's, so
// they carried the client's trace-id).

// The ids of the client's traceparent: hex of its choosing.
const (
	leakTraceID = "5ec2e75a1a21e5c0ffee00000000a11c"
	leakSpanID  = "5a1a21e5dead0b0e"
	leakTP      = "00-" + leakTraceID + "-" + leakSpanID + "-01"
)

// tracings are the tracing set-ups of a gateway under test.
func tracings(t *testing.T) []struct {
	name   string
	tracer telemetry.Tracer
} {
	_, recording := newSpanRecorder(t)
	return []struct {
		name   string
		tracer telemetry.Tracer
	}{{"off", nil}, {"not recording", telemetry.Nop()}, {"recording", recording}}
}

// withTraceparent returns msg, a request with params, with tp in its
// params._meta (which it must not have yet).
func withTraceparent(msg, tp string) string {
	if strings.Contains(msg, `"_meta":{`) {
		return strings.Replace(msg, `"_meta":{`, `"_meta":{"traceparent":"`+tp+`",`, 1)
	}
	return strings.Replace(msg, `"params":{`, `"params":{"_meta":{"traceparent":"`+tp+`"},`, 1)
}

// TestAttackTraceparentPastRouteRule: each request below reached the
// closed upstream with the client's trace-id (tracing recording: its
// spans' parent) or both its ids (otherwise), in the traceparent header
// or in params._meta: a 2025-11-25 session's POST (a plain ping, an
// allowed call), GET and DELETE, a 2026-07-28 request, the virtual
// server's inner requests, /ws, a session bridged to an SSE upstream and
// a 2026-07-28 request to it.
func TestAttackTraceparentPastRouteRule(t *testing.T) {
	for _, tc := range tracings(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("streamable", func(t *testing.T) {
				gw, _, tap := headerGateway(t, Options{Tracer: tc.tracer})
				web := gw.URL + "/mcp/web"
				sid := initialize(t, web)
				vsid := initialize(t, gw.URL+"/mcp")
				readSecret(t, gw.URL)
				tap.reset()
				leaked := func(what string) {
					t.Helper()
					if l := tap.leaked(leakTraceID[:16]); len(l) > 0 || len(tap.leaked(leakSpanID)) > 0 {
						t.Errorf("%s: the client's trace ids reached the closed upstream: %q", what, l)
					}
					tap.reset()
				}
				sess := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", "Traceparent": leakTP}
				call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"}}}`

				if _, body := request(t, t.Context(), http.MethodPost, web, sess, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); !strings.Contains(body, `"result"`) {
					t.Fatalf("ping: %s", body)
				}
				leaked("2025 ping")
				if _, body := request(t, t.Context(), http.MethodPost, web, sess, withTraceparent(call, leakTP)); !strings.Contains(body, "looked up") {
					t.Fatalf("call: %s", body)
				}
				leaked("2025 call")
				getStream(t, tap, web, withHdr(sess, "Accept", "text/event-stream"))
				leaked("2025 GET")

				modern := withTraceparent(`{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"},"_meta":{`+rawMeta+`}}}`, leakTP)
				if _, body := request(t, t.Context(), http.MethodPost, web, withHdr(modernHeaders("tools/call", "lookup"), "Traceparent", leakTP), modern); !strings.Contains(body, "looked up") {
					t.Fatalf("2026 call: %s", body)
				}
				leaked("2026 call")

				vh := map[string]string{"Mcp-Session-Id": vsid, "Mcp-Protocol-Version": "2025-11-25", "Traceparent": leakTP}
				_, list := request(t, t.Context(), http.MethodPost, gw.URL+"/mcp", vh, `{"jsonrpc":"2.0","id":"v1","method":"tools/list"}`)
				lookup := "lookup"
				if strings.Contains(list, `"web_lookup"`) {
					lookup = "web_lookup"
				}
				if _, body := request(t, t.Context(), http.MethodPost, gw.URL+"/mcp", vh,
					withTraceparent(strings.Replace(call, `"lookup"`, `"`+lookup+`"`, 1), leakTP)); !strings.Contains(body, "looked up") {
					t.Fatalf("virtual call %s: %s (list %s)", lookup, body, list)
				}
				leaked("virtual")

				c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web", Header: http.Header{"Traceparent": {leakTP}}})
				send := relayedSender(t, c)
				send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
				send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				if answer := send(withTraceparent(call, leakTP)); !strings.Contains(answer, "looked up") {
					t.Fatalf("ws call: %s", answer)
				}
				leaked("ws")

				request(t, t.Context(), http.MethodDelete, web, sess, "")
				leaked("2025 DELETE")
			})
			t.Run("bridged", func(t *testing.T) {
				gw, web := bridgedGatewayWith(t, Options{Tracer: tc.tracer})
				sid := initialize(t, gw.URL+"/mcp/web")
				readSecret(t, gw.URL)
				count := `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"count","arguments":{}}}`
				sess := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", "Traceparent": leakTP}
				if _, _, body := post(t, gw.URL+"/mcp/web", sess, withTraceparent(count, leakTP)); !strings.Contains(body, "counted") {
					t.Fatalf("bridged call: %s", body)
				}
				if web.reached(leakTraceID[:16]) || web.reached(leakSpanID) {
					t.Error("bridged session: the client's trace ids reached the closed upstream")
				}
				modern := withTraceparent(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"count","arguments":{},"_meta":{`+rawMeta+`}}}`, strings.Replace(leakTP, "a11c", "a11d", 1))
				if _, _, body := post(t, gw.URL+"/mcp/web", withHdr(modernHeaders("tools/call", "count"), "Traceparent", leakTP), modern); !strings.Contains(body, "counted") {
					t.Fatalf("2026 bridged call: %s", body)
				}
				if web.reached(leakTraceID[:16]) || web.reached(leakSpanID) {
					t.Error("2026 request to a bridged upstream: the client's trace ids reached the closed upstream")
				}
				escaped := strings.Replace(strings.Replace(modern, `"traceparent"`, `"tr\u0061ceparent"`, 1), `"id":"s"`, `"id":"e"`, 1)
				if _, _, body := post(t, gw.URL+"/mcp/web", modernHeaders("tools/call", "count"), escaped); !strings.Contains(body, "counted") {
					t.Fatalf("2026 bridged call, escaped: %s", body)
				}
				if web.reached(leakTraceID[:16]) || web.reached(leakSpanID) {
					t.Error("2026 request to a bridged upstream, its traceparent's name escaped: the client's trace ids reached the closed upstream")
				}
				header := `{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"count","arguments":{},"_meta":{` + rawMeta + `}}}`
				if _, _, body := post(t, gw.URL+"/mcp/web", withHdr(modernHeaders("tools/call", "count"), "Traceparent", leakTP), header); !strings.Contains(body, "counted") {
					t.Fatalf("2026 bridged call, traceparent header: %s", body)
				}
				if web.reached(leakTraceID[:16]) || web.reached(leakSpanID) {
					t.Error("2026 request to a bridged upstream, a traceparent header: the client's trace ids reached the closed upstream")
				}
			})
		})
	}
}

// getStream opens the GET stream of url with hdr, and closes it once tap
// has seen it.
func getStream(t *testing.T, tap *headerTap, url string, hdr map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		request(t, ctx, http.MethodGet, url, hdr, "")
	}()
	tap.waitFor(t, http.MethodGet)
	cancel()
	<-done
}

// values returns the values of header name on the requests of method tap
// saw, and the bodies of its POSTs.
func (h *headerTap) values(method, name string) (vals, bodies []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.seen {
		if v, ok := strings.CutPrefix(s, method+" "+name+": "); ok {
			vals = append(vals, v)
		}
		if b, ok := strings.CutPrefix(s, "POST body: "); ok {
			bodies = append(bodies, b)
		}
	}
	return vals, bodies
}

// checkApart checks that tp, the traceparent a closed upstream got, is of
// a trace of the gateway's own: not client's, whose root is the call's
// client span, linked to the call's server span in the client's trace.
func checkApart(t *testing.T, spans *spanRecorder, tp, client string) {
	t.Helper()
	if !validTraceparent(tp) || strings.Contains(tp, client) {
		t.Fatalf("closed upstream: got traceparent %q, want one in W3C form of another trace than the client's %s", tp, client)
	}
	root := spans.wait(t, tp[3:35], "client")
	server := spans.wait(t, client, "server")
	switch {
	case root.Parent.IsValid():
		t.Errorf("the closed upstream's client span: got parent %v, want a root", root.Parent)
	case root.SpanContext.SpanID().String() != tp[36:52]:
		t.Errorf("the closed upstream got span %s, want the client span %s", tp[36:52], root.SpanContext.SpanID())
	case len(root.Links) != 1 || !root.Links[0].SpanContext.Equal(server.SpanContext):
		t.Errorf("the closed upstream's client span: got links %v, want one to the call's server span %v", root.Links, server.SpanContext)
	}
}

// TestClosedUpstreamTraceLegit: with tracing recording, an upstream open
// to the client gets a span of the client's trace as before; closed, it
// gets a trace context of the gateway's in the header and params._meta
// alike: a trace of its own whose root, the call's client span, links to
// the call's server span in the client's trace, on an HTTP session and a
// bridged one. With tracing off, a closed upstream gets none.
func TestClosedUpstreamTraceLegit(t *testing.T) {
	const openTrace, closedTrace, bridgedTrace = "4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6a3ce929d0e0e4737", "4bf92f3577b34da6a3ce929d0e0e4738"
	tpOf := func(trace string) string { return "00-" + trace + "-00f067aa0ba902b7-01" }
	call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"}}}`
	t.Run("streamable", func(t *testing.T) {
		spans, tracer := newSpanRecorder(t)
		gw, _, tap := headerGateway(t, Options{Tracer: tracer})
		web := gw.URL + "/mcp/web"
		sid := initialize(t, web)
		h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		tap.reset()
		request(t, t.Context(), http.MethodPost, web, withHdr(h, "Traceparent", tpOf(openTrace)), call)
		if got, _ := tap.values(http.MethodPost, "Traceparent"); len(got) != 1 || !strings.Contains(got[0], openTrace) {
			t.Errorf("open upstream: got traceparent %q, want a span of the client's trace %s", got, openTrace)
		}

		readSecret(t, gw.URL)
		tap.reset()
		if _, body := request(t, t.Context(), http.MethodPost, web, withHdr(h, "Traceparent", tpOf(closedTrace)), withTraceparent(call, tpOf(closedTrace))); !strings.Contains(body, "looked up") {
			t.Fatalf("call after the read: %s", body)
		}
		got, bodies := tap.values(http.MethodPost, "Traceparent")
		if len(got) != 1 || len(bodies) != 1 || !strings.Contains(bodies[0], `"traceparent":"`+got[0]+`"`) {
			t.Fatalf("closed upstream: got traceparent %q and body %q, want the same in params._meta", got, bodies)
		}
		checkApart(t, spans, got[0], closedTrace)
	})
	t.Run("bridged", func(t *testing.T) {
		spans, tracer := newSpanRecorder(t)
		gw, web := bridgedGatewayWith(t, Options{Tracer: tracer})
		sid := initialize(t, gw.URL+"/mcp/web")
		readSecret(t, gw.URL)
		count := `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"count","arguments":{}}}`
		h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		if _, _, body := post(t, gw.URL+"/mcp/web", h, withTraceparent(count, tpOf(bridgedTrace))); !strings.Contains(body, "counted") {
			t.Fatalf("bridged call: %s", body)
		}
		web.mu.Lock()
		var tp string
		for _, m := range web.got {
			if _, rest, ok := strings.Cut(m, `"traceparent":"`); ok && strings.Contains(m, `"count"`) {
				tp, _, _ = strings.Cut(rest, `"`)
			}
		}
		web.mu.Unlock()
		checkApart(t, spans, tp, bridgedTrace)
	})
	t.Run("off", func(t *testing.T) {
		gw, _, tap := headerGateway(t, Options{})
		web := gw.URL + "/mcp/web"
		sid := initialize(t, web)
		readSecret(t, gw.URL)
		tap.reset()
		h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", "Traceparent": tpOf(closedTrace)}
		if _, body := request(t, t.Context(), http.MethodPost, web, h, withTraceparent(call, tpOf(closedTrace))); !strings.Contains(body, "looked up") {
			t.Fatalf("call after the read: %s", body)
		}
		if got, bodies := tap.values(http.MethodPost, "Traceparent"); len(got) != 0 || len(bodies) != 1 || strings.Contains(bodies[0], "traceparent") {
			t.Errorf("closed upstream, tracing off: got traceparent %q and body %q, want none in either", got, bodies)
		}
	})
}

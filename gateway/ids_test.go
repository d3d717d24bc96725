package gateway

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// progressGateway serves docs (the demo server) and web, a go-sdk server
// whose web_search is the sink carryPolicy closes and whose count tool
// reports progress twice on the token it was given (go-sdk writes them on
// the call's own stream before its result; mcp-go's server drops one now
// and then), under carryPolicy.
func progressGateway(t *testing.T) (gw *httptest.Server, web *recorder) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "web", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "web_search"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "results"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "count"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		if tok == nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no progress token"}}}, nil, nil
		}
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2}); err != nil {
				return nil, nil, err
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "counted"}}}, nil, nil
	})
	// go-sdk serves 2026-07-28 requests statelessly only; a 2025 client
	// keeps a session, which is what names it to the route rule.
	stateful := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	web = &recorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isModern(r.Header.Get(hdrVersion)) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})}
	up := httptest.NewServer(web)
	t.Cleanup(up.Close)
	gw, _ = carryStack(t, Options{}, Upstream{Name: "web", URL: up.URL + "/mcp"})
	return gw, web
}

// TestClosedUpstreamProgressMCPGo: mcp-go's client, in each era, calls a
// tool of a closed upstream with a progress token and gets the progress
// notifications under its own token and the result under its own id,
// while the upstream sees neither.
func TestClosedUpstreamProgressMCPGo(t *testing.T) {
	gw, web := progressGateway(t)
	readSecret(t, gw.URL)
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c := mcpGoClient(t, ctx, gw.URL+"/mcp/web", version)
			tokens := make(chan any, 8)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == "notifications/progress" {
					tokens <- n.Params.AdditionalFields["progressToken"]
				}
			})
			tok := "tok-" + version
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "count", Meta: &mcp.Meta{ProgressToken: mcp.ProgressToken(tok)}}})
			if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != "counted" {
				t.Fatalf("count: got %+v, %v, want counted", res, err)
			}
			// The client hands notifications to its handler on its own
			// goroutine: they may come after the result.
			for i := range 2 {
				select {
				case got := <-tokens:
					if got != tok {
						t.Errorf("progress %d: got token %v, want %q", i+1, got, tok)
					}
				case <-ctx.Done():
					t.Fatalf("progress %d: never came", i+1)
				}
			}
			if web.reached(tok) {
				t.Errorf("the client's progress token reached the closed upstream")
			}
			if !web.reached(`"progressToken":"sluice-`) {
				t.Errorf("the upstream was not sent the gateway's progress token")
			}
		})
	}
}

// scriptedWeb is a bridged upstream (over SSE) that records every message
// it reads. It offers web_search (so carryPolicy's route rule closes it),
// count, which reports progress twice on its token, wait, answered only
// when cancelled, and ask, which pings the client and answers once the
// client answered the ping; every other request gets an empty result.
type scriptedWeb struct {
	mu  sync.Mutex
	got []string
	saw chan struct{} // closed on the next message read; nil: none waits
}

// waitFor waits until web has read a message holding mark.
func (s *scriptedWeb) waitFor(t *testing.T, mark string) {
	t.Helper()
	for {
		s.mu.Lock()
		for _, m := range s.got {
			if strings.Contains(m, mark) {
				s.mu.Unlock()
				return
			}
		}
		if s.saw == nil {
			s.saw = make(chan struct{})
		}
		saw := s.saw
		s.mu.Unlock()
		select {
		case <-saw:
		case <-t.Context().Done():
			t.Fatalf("web never read %s", mark)
		}
	}
}

func (s *scriptedWeb) reached(mark string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.got {
		if strings.Contains(m, mark) {
			return true
		}
	}
	return false
}

func (s *scriptedWeb) serve(ctx context.Context, c transport.Conn) {
	waiting := map[string]jsontext.Value{}
	asking := map[string]jsontext.Value{} // the ping's id key -> the ask call's id
	write := func(msg string) { _ = c.Write(ctx, []byte(msg)) }
	result := func(id jsontext.Value, r string) {
		write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + r + `}`)
	}
	for {
		b, err := c.Read(ctx)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.got = append(s.got, string(b))
		if s.saw != nil {
			close(s.saw)
			s.saw = nil
		}
		s.mu.Unlock()
		m, err := intercept.DecodeMessage(b)
		switch {
		case err != nil:
		case m.Method == "initialize":
			result(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"web","version":"1"}}`)
		case m.Method == "tools/list":
			result(m.ID, `{"tools":[{"name":"web_search","inputSchema":{"type":"object"}},{"name":"count","inputSchema":{"type":"object"}},`+
				`{"name":"wait","inputSchema":{"type":"object"}},{"name":"ask","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call" && m.Name == "count":
			tok := intercept.Member(m.Meta, "progressToken")
			for i := 1; i <= 2 && tok != nil; i++ {
				write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(tok) + `,"progress":` + itoa(i) + `,"total":2}}`)
			}
			result(m.ID, `{"content":[{"type":"text","text":"counted"}]}`)
		case m.Method == "tools/call" && m.Name == "wait":
			waiting[m.IDKey()] = m.ID
		case m.Method == "tools/call" && m.Name == "ask":
			ping := `"up-ping-` + itoa(len(asking)) + `"`
			asking[ping] = m.ID
			write(`{"jsonrpc":"2.0","id":` + ping + `,"method":"ping"}`)
		case m.Kind == intercept.KindResponse && asking[m.IDKey()] != nil:
			result(asking[m.IDKey()], `{"content":[{"type":"text","text":"asked"}]}`)
			delete(asking, m.IDKey())
		case m.Method == "notifications/cancelled":
			key := intercept.IDKeyOf(intercept.Member(m.Params, "requestId"))
			if id, ok := waiting[key]; ok {
				delete(waiting, key)
				result(id, `{"content":[{"type":"text","text":"cancelled"}]}`)
			}
		case m.Kind == intercept.KindRequest:
			result(m.ID, `{}`)
		}
	}
}

// bridgedGateway serves docs (the demo server) and web, a scriptedWeb over
// SSE, under carryPolicy.
func bridgedGateway(t *testing.T) (gw *httptest.Server, web *scriptedWeb) {
	t.Helper()
	return bridgedGatewayWith(t, Options{})
}

// bridgedGatewayWith is bridgedGateway with opts for the rest.
func bridgedGatewayWith(t *testing.T, opts Options) (gw *httptest.Server, web *scriptedWeb) {
	t.Helper()
	web = new(scriptedWeb)
	srv := &transport.SSEServer{OnSession: func(ctx context.Context, _ string, c transport.Conn) { web.serve(ctx, c) }}
	up := httptest.NewServer(srv)
	t.Cleanup(up.Close)
	t.Cleanup(func() { srv.Close() })
	gw, _ = carryStack(t, opts, Upstream{Name: "web", Transport: TransportSSE, URL: up.URL + "/sse"})
	return gw, web
}

// TestClosedBridgedUpstreamIDs: a 2025 session with a bridged upstream
// closed to its client sends it none of the client's ids, tokens or
// cancellation requestIds (each reached it before), and the client gets
// its answers, progress and cancellations as before.
func TestClosedBridgedUpstreamIDs(t *testing.T) {
	gw, web := bridgedGateway(t)
	readSecret(t, gw.URL)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web_search","arguments":{}}}`); !strings.Contains(body, "no-exfil") {
		t.Fatalf("web_search after the read: %s, want the route rule's deny", body)
	}
	for n, s := range []struct{ name, msg, want string }{
		{"ping id", `{"jsonrpc":"2.0","id":"{{M}}","method":"ping"}`, `"id":"{{M}}","result":{}`},
		{"tools/list id", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/list"}`, `"id":"{{M}}","result":{"tools"`},
		{"zero id", `{"jsonrpc":"2.0","id":0,"method":"ping","params":{"_meta":{}},"x":null}`, ``},
		{"call progressToken", `{"jsonrpc":"2.0","id":-5,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"{{M}}"}}}`,
			`"progressToken":"{{M}}","progress":1,`},
		{"cancelled requestId", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"{{M}}"}}`, ``},
	} {
		mark := markOf(900 + n)
		status, _, body := post(t, gw.URL+"/mcp/web", hdr, strings.ReplaceAll(s.msg, "{{M}}", mark))
		if web.reached(mark) {
			t.Errorf("%s: the mark reached the closed upstream (gateway answered %d %.200s)", s.name, status, body)
		}
		if want := strings.ReplaceAll(s.want, "{{M}}", mark); !strings.Contains(body, want) {
			t.Errorf("%s: got %d %.300s, want an answer holding %s", s.name, status, body, want)
		}
		if s.name == "call progressToken" && (strings.Count(body, mark) != 2 || !strings.Contains(body, `"id":-5,"result"`)) {
			t.Errorf("%s: got %.400s, want both progress notifications under the client's token and the result under -5", s.name, body)
		}
	}

	// A call that waits until cancelled.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waited := make(chan string, 1)
	go func() {
		resp := openPost(t, ctx, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"w-1","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
		b, _ := io.ReadAll(resp.Body)
		waited <- string(b)
	}()
	for !web.reached(`"name":"wait"`) {
		select {
		case <-ctx.Done():
			t.Fatal("the wait call never reached the upstream")
		case <-time.After(10 * time.Millisecond):
		}
	}
	post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w-1"}}`)
	select {
	case b := <-waited:
		if !strings.Contains(b, `"id":"w-1"`) || !strings.Contains(b, "cancelled") {
			t.Errorf("the cancelled call: got %s, want the upstream's answer under the client's id", b)
		}
	case <-ctx.Done():
		t.Error("the cancellation never reached the upstream under the gateway's id of the call")
	}
	if web.reached(`"w-1"`) {
		t.Error("the client's id of the wait call reached the closed upstream")
	}
}

// TestClosedRelayedUpstreamIDsLegit: over /ws, a client of a closed
// upstream gets progress under its own token and its answers under its
// own ids, 0 among them, its cancellation of an open call reaches the
// upstream under the gateway's id, and its answer to the upstream's ping
// reaches it.
func TestClosedRelayedUpstreamIDsLegit(t *testing.T) {
	gw, web := bridgedGateway(t)
	readSecret(t, gw.URL)
	c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web"})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	write := func(m string) {
		if err := c.Write(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// until reads messages until one holds want, and returns those read.
	until := func(want string) []string {
		var got []string
		for {
			b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v (read %q)", want, err, got)
			}
			got = append(got, string(b))
			if strings.Contains(string(b), want) {
				return got
			}
		}
	}
	write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	until(`"id":"init"`)
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":7}}}`)
	got := until(`"id":0,"result"`)
	if n := strings.Count(strings.Join(got, "\n"), `"progressToken":7,`); n != 2 {
		t.Errorf("count: got %q, want two progress notifications under token 7", got)
	}
	write(`{"jsonrpc":"2.0","id":"w-2","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	for !web.reached(`"name":"wait"`) {
		select {
		case <-ctx.Done():
			t.Fatal("the wait call never reached the upstream")
		case <-time.After(10 * time.Millisecond):
		}
	}
	write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w-2"}}`)
	until(`"id":"w-2","result":{"content":[{"type":"text","text":"cancelled"}]}`)
	// The upstream's own request is answered under its id.
	write(`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	until(`"method":"ping"`)
	write(`{"jsonrpc":"2.0","id":"up-ping-0","result":{}}`)
	until(`"id":"a-1","result":{"content":[{"type":"text","text":"asked"}]}`)
	if web.reached(`"w-2"`) || web.reached(`"progressToken":7`) || web.reached(`"id":0,`) {
		t.Error("a client's id or token reached the closed upstream")
	}
}

// TestClosedUpstreamResumedGoSDK: go-sdk's client on a session of an
// upstream closed to it (a go-sdk server that answers tools/list and
// tools/call only on a resumed stream, SEP-1699) gets both answers on the
// resumed GET stream under its own ids.
func TestClosedUpstreamResumedGoSDK(t *testing.T) {
	up := resumingUpstream(t)
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	const pol = `default: allow
tool_classes:
  docs/read_document: [source:sensitive]
  web/send_email: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
`
	p, err := policy.Compile([]byte(pol), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: p}
	g, err := New(Options{Upstreams: []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: up.URL}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	readSecret(t, gw.URL)
	if !ic.Closed(t.Context(), intercept.CallContext{Upstream: "web", Agent: "raw"}) {
		t.Fatal("web is not closed to raw after the read")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "raw", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: gw.URL + "/mcp/web", DisableStandaloneSSE: true},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) == 0 || tools.Tools[0].Name != "echo" {
		t.Errorf("tools/list: got %d tools, want echo first", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != "Echo: hi" {
		t.Errorf("tools/call: got %+v, want Echo: hi", res.Content)
	}
}

// TestIDTableOpenCostsNothing: while no request waits under the
// gateway's ids (an upstream never closed), restoring what the upstream
// sends is a load: no allocation, the message itself.
func TestIDTableOpenCostsNothing(t *testing.T) {
	var ids idTable
	msg := []byte(`{"jsonrpc":"2.0","id":"a","result":{}}`)
	if n := testing.AllocsPerRun(100, func() {
		if out := ids.restore(msg); &out[0] != &msg[0] {
			t.Fatal("restore changed the message")
		}
	}); n != 0 {
		t.Errorf("got %v allocations per message, want 0", n)
	}
	initialized := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if carriesIDs([]*intercept.Message{{Kind: intercept.KindNotification, Method: "notifications/initialized", Raw: initialized}}) {
		t.Error("notifications/initialized: want no closed check")
	}
}

// FuzzIDSwapRestore: whatever an upstream sends, giving back the
// client's ids never panics, leaves a message naming none of the
// gateway's ids or tokens as it was, and yields JSON-RPC the gateway
// reads when it changed something.
func FuzzIDSwapRestore(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"sluice-1","result":{}}`,
		`[{"jsonrpc":"2.0","id":"sluice-1","error":{"code":1,"message":"x"}},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"sluice-p","progress":1}}`,
		`{"jsonrpc":"2.0","id":"sluice-1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"sluice\u002d1","result":{}}`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	s := &idSwap{ids: map[string]jsontext.Value{`"sluice-1"`: jsontext.Value(`"client"`)},
		tokens: map[string]jsontext.Value{`"sluice-p"`: jsontext.Value(`0`)}}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := s.restore(b)
		if string(out) == string(b) {
			return
		}
		if _, _, err := intercept.Decode(out); err != nil {
			t.Fatalf("restore(%q) = %q, which does not decode: %v", b, out, err)
		}
		if strings.Contains(string(out), "sluice-1") && !strings.Contains(string(b), `"method"`) {
			t.Errorf("restore(%q) = %q still names the gateway's id", b, out)
		}
	})
}

// TestClosedBridgedUpstreamAnswers: on a bridged session closed to its
// client, the client's answer to the upstream's own request (a ping while
// a call waits) reaches the upstream, and the call ends.
func TestClosedBridgedUpstreamAnswers(t *testing.T) {
	gw, _ := bridgedGateway(t)
	readSecret(t, gw.URL)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp := openPost(t, ctx, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the call's stream ended before the upstream's ping: %v", err)
		}
		if strings.Contains(line, `"method":"ping"`) {
			break
		}
	}
	if status, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"up-ping-0","result":{}}`); status != http.StatusAccepted {
		t.Fatalf("the answer to the ping: got %d %s", status, body)
	}
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"id":"a-1","result":{"content":[{"type":"text","text":"asked"}]}`) {
		t.Errorf("the call after the answer: got %s, want the upstream's result", rest)
	}
}

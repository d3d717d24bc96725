package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// askingUpstream is a go-sdk server whose tools ask the client something
// while they run; go-sdk sends those requests on the call's own SSE answer.
func askingUpstream(name string) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "summarize", Description: "Summarizes with the client's model"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: name + ": " + in.Text}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " sampled: " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm", Description: "Asks the user"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %s %v", name, res.Action, res.Content["ok"])}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "Lists the client's roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(uris, ",")}}}, nil, nil
	})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

// mcpgoAskingUpstream is an mcp-go server, which sends its requests to the
// client on the session's GET stream.
func mcpgoAskingUpstream() *httptest.Server {
	srv := mcpgoserver.NewMCPServer("listener", "1")
	srv.EnableSampling()
	srv.AddTool(mcpgo.NewTool("sample"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := srv.RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: mcpgo.CreateMessageParams{MaxTokens: 10,
			Messages: []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.NewTextContent("listener: hi")}}}})
		if err != nil {
			return nil, err
		}
		text, _ := res.Content.(mcpgo.TextContent)
		return mcpgo.NewToolResultText("listener sampled: " + text.Text), nil
	})
	return httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(srv))
}

// TestAggregateRelaysServerRequests: sampling, elicitation and roots
// requests from upstreams behind one virtual server reach the client —
// on the call's SSE answer (go-sdk upstreams) or the GET stream (mcp-go) —
// and its answers reach the upstream that asked, with two upstreams asking
// under the same ids.
func TestAggregateRelaysServerRequests(t *testing.T) {
	a, b, c := askingUpstream("alpha"), askingUpstream("beta"), mcpgoAskingUpstream()
	for _, s := range []*httptest.Server{a, b, c} {
		t.Cleanup(s.Close)
	}
	gwURL := allowAllGateway(t, Options{
		Upstreams:          []Upstream{{Name: "alpha", URL: a.URL}, {Name: "beta", URL: b.URL}, {Name: "listener", URL: c.URL + "/mcp"}},
		VirtualServers:     []VirtualServer{{Naming: NamingPrefix}},
		OnAggregateDropped: func(_, upstream, why string) { t.Errorf("%s dropped from a list: %s", upstream, why) },
	})

	var sampled atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			asked := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "model read " + strings.SplitN(asked, ":", 2)[0]}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work/project"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gwURL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %v", name, res.Content[0].(*mcp.TextContent).Text)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	// Both go-sdk upstreams number their requests from the same start:
	// each answer still goes to the upstream that asked.
	if got := call("alpha_summarize", map[string]any{"text": "x"}); got != "alpha sampled: model read alpha" {
		t.Errorf("alpha: %q", got)
	}
	if got := call("beta_summarize", map[string]any{"text": "x"}); got != "beta sampled: model read beta" {
		t.Errorf("beta: %q", got)
	}
	if got := call("beta_confirm", nil); got != "beta accept true" {
		t.Errorf("elicitation: %q", got)
	}
	if got := call("alpha_roots", nil); got != "file:///work/project" {
		t.Errorf("roots: %q", got)
	}
	if got := call("listener_sample", nil); got != "listener sampled: model read listener" {
		t.Errorf("mcp-go, on the GET stream: %q", got)
	}
	if n := sampled.Load(); n != 3 {
		t.Errorf("client sampled %d times, want 3", n)
	}
}

// TestAggregateAnswerForged: an answer to an id the virtual server never
// minted (or already answered) is refused, not sent to any upstream.
func TestAggregateAnswerForged(t *testing.T) {
	a := askingUpstream("alpha")
	t.Cleanup(a.Close)
	gwURL := allowAllGateway(t, Options{
		Upstreams:      []Upstream{{Name: "alpha", URL: a.URL}},
		VirtualServers: []VirtualServer{{}},
	})
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"a"}}}`
	code, h, _ := post(t, gwURL+"/mcp", nil, init)
	sid := h.Get("Mcp-Session-Id")
	if code != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", code, sid)
	}
	for _, id := range []string{`"sluice-ask-1"`, `1`, `"sluice-approval-1"`} {
		code, _, body := post(t, gwURL+"/mcp", map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","id":`+id+`,"result":{"action":"accept"}}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "awaits an answer") {
			t.Errorf("answer to %s: %d %s", id, code, body)
		}
	}
	// A client that takes only JSON answers cannot be asked anything: the
	// upstream hears so at once instead of waiting for a sampling answer.
	done := make(chan string, 1)
	go func() {
		_, _, body := post(t, gwURL+"/mcp", map[string]string{"Mcp-Session-Id": sid, "Accept": "application/json"},
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"summarize","arguments":{"text":"x"}}}`)
		done <- body
	}()
	select {
	case body := <-done:
		if !strings.Contains(body, "sampling/createMessage not delivered") {
			t.Errorf("call needing sampling without a stream: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call waited for a sampling answer that could not come")
	}
}

// TestAggregateDiscoverFollowsUpstreams: in front of an upstream that
// speaks only 2025-era versions (go-sdk's stateful server answers
// server/discover but refuses 2026-07-28 calls), the virtual server does not
// claim 2026-07-28: server/discover gets -32022 with the versions it does
// speak, so a client falls back to initialize instead of losing that
// upstream's tools.
func TestAggregateDiscoverFollowsUpstreams(t *testing.T) {
	a := askingUpstream("alpha")
	t.Cleanup(a.Close)
	var probes atomic.Int32
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "server/discover" {
			probes.Add(1)
		}
		a.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	gwURL := allowAllGateway(t, Options{
		Upstreams:      []Upstream{{Name: "alpha", URL: counting.URL}},
		VirtualServers: []VirtualServer{{}},
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	_, _, body := post(t, gwURL+"/mcp", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if !strings.Contains(body, `"code":-32022`) || !strings.Contains(body, `"supported":["2025-11-25"`) {
		t.Errorf("discover in front of a 2025-only upstream: %s", body)
	}
	// A flood of discovers probes the upstream once.
	for range 20 {
		post(t, gwURL+"/mcp", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	}
	if n := probes.Load(); n != 1 {
		t.Errorf("21 discovers probed the upstream %d times, want once", n)
	}
}

// TestAggregateApprovalByElicitation: a call held for approval behind a
// virtual server asks the agent's user — by elicitation/create relayed on
// the call's stream in 2025-11-25, by input_required in 2026-07-28 — and
// goes through only when the user approves.
func TestAggregateApprovalByElicitation(t *testing.T) {
	for _, version := range []string{mcpgo.ProtocolVersion20251125, ""} {
		for _, approve := range []bool{true, false} {
			t.Run(fmt.Sprintf("%q/%v", version, approve), func(t *testing.T) {
				f, store := approvalFixture(t, Options{VirtualServers: []VirtualServer{{Upstreams: []string{"demo"}}}}, false)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				var asked atomic.Int32
				trans, err := mcptransport.NewStreamableHTTP(f.gw.URL + "/mcp")
				if err != nil {
					t.Fatal(err)
				}
				copts := []client.ClientOption{client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
					asked.Add(1)
					if !strings.Contains(r.Params.Message, `tool "add"`) {
						t.Errorf("question %q does not name the tool", r.Params.Message)
					}
					return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
						Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"approve": approve}}}, nil
				}))}
				if version != "" {
					copts = append(copts, client.WithProtocolVersion(version))
				}
				c := client.NewClient(trans, copts...)
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpgo.Implementation{Name: "agg-user", Version: "1"}}}); err != nil {
					t.Fatalf("Initialize: %v", err)
				}
				res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}})
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if asked.Load() != 1 {
					t.Errorf("user asked %d times, want once", asked.Load())
				}
				req := onlyRequest(t, store)
				if approve && (res.IsError || text(res) != "5" || req.Status != approval.Used) {
					t.Errorf("approved: got %+v (request %s), want 5 and the approval used", res, req.Status)
				}
				if !approve && (!res.IsError || req.Status != approval.Declined || f.upstreamSaw(`"name":"add"`)) {
					t.Errorf("declined: got %+v (request %s), want a soft denial and nothing forwarded", res, req.Status)
				}
			})
		}
	}
}

// TestAggregateCancel: a client that gives up on a call sends
// notifications/cancelled for its own request id; the virtual server passes
// it to the upstream serving that call under the id the upstream knows, and
// the upstream's tool sees its context cancelled.
func TestAggregateCancel(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Waits until cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			tell(t, cancelled, struct{}{})
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "never cancelled"}}}, nil, nil
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)
	gwURL := allowAllGateway(t, Options{
		Upstreams:      []Upstream{{Name: "slow", URL: up.URL}},
		VirtualServers: []VirtualServer{{}},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gwURL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callCtx, giveUp := context.WithCancel(ctx)
	go func() { time.Sleep(300 * time.Millisecond); giveUp() }()
	if _, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "wait"}); err == nil {
		t.Fatal("the call the client gave up on returned no error")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's tool was never cancelled")
	}
}

// allowAllGateway serves opts (every call allowed) and returns its URL.
func allowAllGateway(t *testing.T, opts Options) string {
	t.Helper()
	g, err := New(opts, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw.URL
}

// alternate is a client-side balancer without affinity: each request goes
// to the next of hosts (a proxy hop would add its own buffering to what is
// tested).
type alternate struct {
	hosts []string
	next  atomic.Int64
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	u, _ := url.Parse(a.hosts[int(a.next.Add(1)-1)%len(a.hosts)])
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = u.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

// TestAggregateAcrossReplicas: with session keys, a virtual server's
// session is served by any replica. A go-sdk client behind a balancer
// without affinity, over two gateways: list, calls, and sampling and
// elicitation requests relayed by one replica and answered through the
// other.
func TestAggregateAcrossReplicas(t *testing.T) {
	a, b := askingUpstream("alpha"), askingUpstream("beta")
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	opts := Options{
		Upstreams:      []Upstream{{Name: "alpha", URL: a.URL}, {Name: "beta", URL: b.URL}},
		VirtualServers: []VirtualServer{{Naming: NamingPrefix}, {Name: "code", Upstreams: []string{"alpha"}}},
		SessionKeys:    [][]byte{key(7)},
	}
	gw1, gw2 := allowAllGateway(t, opts), allowAllGateway(t, opts)
	lb := &alternate{hosts: []string{gw1, gw2}}
	// A sealed session is good on its own virtual server only, on any
	// replica.
	_, h, _ := post(t, gw1+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw"}}}`)
	sid := h.Get("Mcp-Session-Id")
	if !strings.HasPrefix(sid, virtualPrefix) {
		t.Fatalf("session id %q is not sealed", sid)
	}
	for i, gw := range []string{gw2, gw1} {
		if code, _, body := post(t, gw+"/mcp", map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != 200 || !strings.Contains(body, "alpha_summarize") {
			t.Errorf("replica %d: tools/list on the session's own virtual server: %d %s", i, code, body)
		}
		if code, _, _ := post(t, gw+"/mcp/code", map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusNotFound {
			t.Errorf("replica %d: the session on another virtual server: %d, want 404", i, code)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "model says hi"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw1 + "/mcp", HTTPClient: &http.Client{Transport: lb}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for round := range 3 {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 6 {
			t.Fatalf("round %d: tools %v, %v", round, tools, err)
		}
		for _, tc := range []struct {
			name, want string
			args       map[string]any
		}{
			{"alpha_summarize", "alpha sampled: model says hi", map[string]any{"text": "x"}},
			{"beta_summarize", "beta sampled: model says hi", map[string]any{"text": "x"}},
			{"beta_confirm", "beta accept true", map[string]any{}},
		} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.name, Arguments: tc.args})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != tc.want {
				got := ""
				if res != nil && len(res.Content) > 0 {
					got = res.Content[0].(*mcp.TextContent).Text
				}
				t.Fatalf("round %d: %s = %q (error result %v), %v; want %q", round, tc.name, got, res != nil && res.IsError, err, tc.want)
			}
		}
	}
}

// TestAggregateStdioAcrossReplicas: a stdio upstream is a process of one
// replica. A virtual session sealed on one replica and used on another
// opens its own session there on that upstream instead of failing.
func TestAggregateStdioAcrossReplicas(t *testing.T) {
	bin := buildDemoServer(t)
	opts := Options{
		Upstreams:      []Upstream{{Name: "local", Command: bin}},
		VirtualServers: []VirtualServer{{}},
		SessionKeys:    [][]byte{key(9)},
	}
	gw1, gw2 := allowAllGateway(t, opts), allowAllGateway(t, opts)
	_, h, body := post(t, gw1+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw"}}}`)
	sid := h.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %s", body)
	}
	// Initialize params too large to travel in every request's header are
	// cut down to what the other replicas need.
	big := strings.Repeat("x", 64<<10)
	_, h2, _ := post(t, gw1+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"`+big+`"}}}`)
	if len(h2.Get("Mcp-Session-Id")) > 8<<10 {
		t.Errorf("a session id of %d bytes", len(h2.Get("Mcp-Session-Id")))
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"from %s"}}}`
	for _, gw := range []string{gw2, gw1, gw2} {
		code, _, body := post(t, gw+"/mcp", map[string]string{"Mcp-Session-Id": sid}, fmt.Sprintf(call, gw))
		if code != 200 || !strings.Contains(body, "from "+gw) || strings.Contains(body, `"error"`) {
			t.Errorf("echo through %s: %d %s", gw, code, body)
		}
	}
}

// TestAggregateAskNotDelivered: a request from an upstream that cannot be
// written to the client is answered to that upstream at once, under the
// upstream's own id, with the reason.
func TestAggregateAskNotDelivered(t *testing.T) {
	f := newFixture(t, allowEcho, Options{VirtualServers: []VirtualServer{{Upstreams: []string{"demo"}}}})
	_, h, _ := post(t, f.gw.URL+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw"}}}`)
	a := f.g.virtual[""]
	a.mu.Lock()
	s := a.sessions[h.Get("Mcp-Session-Id")]
	a.mu.Unlock()
	if s == nil {
		t.Fatal("no session")
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	in, err := a.inner(r, s, "demo")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		send func([]byte) bool
		why  string
	}{
		{"no stream", nil, "no stream open"},
		{"stream gone", func([]byte) bool { return false }, "closed or too far behind"},
	} {
		id := fmt.Sprint(7700 + i)
		if key := a.ask(r, s, "demo", in, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`), tc.send); key != "" {
			t.Fatalf("%s: relayed as %s", tc.name, key)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !f.upstreamSaw(`"id":`+id) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !f.upstreamSaw(`"id":`+id) || !f.upstreamSaw(tc.why) {
			t.Errorf("%s: the upstream did not get an error under its own id %s saying %q", tc.name, id, tc.why)
		}
	}
}

// TestAggregateAskOnGETStream: a client that takes only JSON answers but
// has its GET stream open gets an upstream's request there, and its
// answer completes the call.
func TestAggregateAskOnGETStream(t *testing.T) {
	a := askingUpstream("alpha")
	t.Cleanup(a.Close)
	gw := allowAllGateway(t, Options{Upstreams: []Upstream{{Name: "alpha", URL: a.URL}}, VirtualServers: []VirtualServer{{}}})
	_, h, _ := post(t, gw+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw"}}}`)
	hdr := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", hdr["Mcp-Session-Id"])
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	done := make(chan string, 1)
	go func() {
		_, _, body := post(t, gw+"/mcp", map[string]string{"Mcp-Session-Id": hdr["Mcp-Session-Id"], "Accept": "application/json"},
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"summarize","arguments":{"text":"x"}}}`)
		done <- body
	}()
	q, raw := nextMessage(t, transport.NewSSEReader(stream.Body))
	if q.Method != "sampling/createMessage" {
		t.Fatalf("on the GET stream: %s, want the upstream's sampling request", raw)
	}
	if code, _, body := post(t, gw+"/mcp", hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"from the GET stream"}}}`); code != http.StatusAccepted {
		t.Fatalf("answer: %d %s", code, body)
	}
	select {
	case body := <-done:
		if !strings.Contains(body, "alpha sampled: from the GET stream") {
			t.Errorf("call: %s", body)
		}
	case <-ctx.Done():
		t.Fatal("the call never completed")
	}
}

// TestAggregateSealedSessionOtherPrincipal: a sealed virtual session is
// refused (404) to another principal on any replica, and the /sse message
// endpoint of a virtual session refuses another principal's POST.
func TestAggregateSealedSessionOtherPrincipal(t *testing.T) {
	a := askingUpstream("alpha")
	t.Cleanup(a.Close)
	opts := Options{Upstreams: []Upstream{{Name: "alpha", URL: a.URL}}, VirtualServers: []VirtualServer{{}}, SessionKeys: [][]byte{key(5)}}
	var urls []string
	for range 2 {
		g, err := New(opts, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(principalHeader(g.Handler()))
		t.Cleanup(func() { closeServed(t, srv, g) })
		urls = append(urls, srv.URL)
	}
	_, h, _ := post(t, urls[0]+"/mcp", map[string]string{"X-Principal": "alice"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a"}}}`)
	sid := h.Get("Mcp-Session-Id")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for i, u := range urls {
		if code, _, _ := post(t, u+"/mcp", map[string]string{"X-Principal": "alice", "Mcp-Session-Id": sid}, list); code != 200 {
			t.Errorf("replica %d: alice's own session: %d", i, code)
		}
		if code, _, _ := post(t, u+"/mcp", map[string]string{"X-Principal": "mallory", "Mcp-Session-Id": sid}, list); code != http.StatusNotFound {
			t.Errorf("replica %d: mallory with alice's session: %d, want 404", i, code)
		}
	}

	// /sse: alice opens a stream; mallory posts to its message endpoint.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, urls[0]+"/sse", nil)
	req.Header.Set("X-Principal", "alice")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	ev, err := transport.NewSSEReader(stream.Body).Next()
	if err != nil || ev.Event != "endpoint" {
		t.Fatalf("endpoint event: %+v %v", ev, err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"m"}}}`
	if code, _, _ := post(t, urls[0]+string(ev.Data), map[string]string{"X-Principal": "mallory"}, init); code < 400 {
		t.Errorf("mallory posting to alice's /sse session: %d, want refused", code)
	}
	if code, _, _ := post(t, urls[0]+string(ev.Data), map[string]string{"X-Principal": "alice"}, init); code != http.StatusAccepted {
		t.Errorf("alice posting to her /sse session: %d, want 202", code)
	}
}

package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// mrtrKey is the MRTR server's own key for the requestState it seals.
var mrtrKey = []byte("the upstream's own state key")

func mrtrSeal(acct string) string {
	mac := hmac.New(sha256.New, mrtrKey)
	mac.Write([]byte(acct))
	return acct + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func mrtrOpen(state string) (string, bool) {
	acct, _, ok := strings.Cut(state, ".")
	return acct, ok && hmac.Equal([]byte(mrtrSeal(acct)), []byte(state))
}

// mrtrServer is an mcp-go server whose tools ask for input the 2026-07-28
// way (input_required with a requestState the client echoes back):
//
//   - deploy, as mcp-go's multi_round_trip example: the state carries the
//     environment, and the confirmed retry deploys to the state's one;
//   - statement: the user logs in (an elicitation), and the server seals
//     the account into the state (HMAC, as MCP asks of state that affects
//     authorization); the confirmed retry shows that account's statement.
//     Behind the gateway every agent reaches it with the gateway's own
//     credentials, so it cannot bind the state to the agent.
func mrtrServer() *server.MCPServer {
	s := server.NewMCPServer("mrtr", "1.0.0", server.WithToolCapabilities(true))
	ask := func(msg string, props map[string]any) mcp.ElicitationParams {
		return mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object", "properties": props}}
	}
	confirm := ask("Proceed?", map[string]any{"approve": map[string]any{"type": "boolean"}})
	accepted := func(req mcp.CallToolRequest, key string) map[string]any {
		ans := server.ElicitationResponse(req.Params.InputResponses, key)
		if ans == nil || ans.Action != mcp.ElicitationResponseActionAccept {
			return nil
		}
		content, _ := ans.Content.(map[string]any)
		if content == nil {
			content = map[string]any{}
		}
		return content
	}
	s.AddTool(mcp.NewTool("deploy", mcp.WithString("environment", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if accepted(req, "confirm") != nil {
				return mcp.NewToolResultText("deployed to " + strings.TrimPrefix(req.Params.RequestState, "env=")), nil
			}
			return server.NewInputRequestBuilder("env="+req.GetString("environment", "")).Elicit("confirm", confirm).ToolResult(), nil
		})
	s.AddTool(mcp.NewTool("statement"),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if st := req.Params.RequestState; st != "" {
				acct, ok := mrtrOpen(st)
				if !ok {
					return mcp.NewToolResultError("requestState refused"), nil
				}
				if accepted(req, "confirm") != nil {
					return mcp.NewToolResultText("statement of " + acct + ": balance 1000"), nil
				}
			}
			if login := accepted(req, "login"); login != nil {
				acct, _ := login["account"].(string)
				return server.NewInputRequestBuilder(mrtrSeal(acct)).Elicit("confirm", confirm).ToolResult(), nil
			}
			return server.NewInputRequestBuilder("").Elicit("login", ask("Log in", map[string]any{"account": map[string]any{"type": "string"}})).ToolResult(), nil
		})
	return s
}

// TestHelperMRTRStdio is mrtrServer as a stdio server, run as a child
// process by TestUpstreamRequestStateBound; on its own it does nothing.
func TestHelperMRTRStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_MRTR_STDIO") != "1" {
		return
	}
	_ = server.ServeStdio(mrtrServer())
	os.Exit(0) // before the test framework writes to stdout
}

// TestUpstreamRequestStateBound: in 2026-07-28 an upstream that needs
// input answers input_required with a requestState, and the client sends
// the call again with the state and its answers. Policy decides the
// retry's arguments, but the upstream acts on the state, which the client
// holds and sends back:
//
//   - forged: policy allows deploy to staging only; the client sends
//     deploy {"environment":"staging"} with requestState "env=production"
//     and mcp-go's example server deploys to production;
//   - another agent's: the upstream seals the state it issues (HMAC), but
//     sees the gateway's credentials for every agent; bob sends his own
//     allowed statement call with the state alice's user logged in with,
//     and reads alice's statement.
//
// A requestState must be one the upstream gave this agent in answer to
// this very call (tool and arguments); anything else is refused with
// -32602 and not forwarded. Checked on an HTTP upstream and on a stdio one
// (the shared stateless connection), with a real mcp-go client's own round
// trip still going through.
func TestUpstreamRequestStateBound(t *testing.T) {
	up := httptest.NewServer(server.NewStreamableHTTPServer(mrtrServer()))
	t.Cleanup(up.Close)
	dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		switch {
		case d.ToolName == "statement":
			return intercept.Decision{Verdict: intercept.Allow, Reason: "everyone's own statement"}, nil
		case d.ToolName == "deploy" && intercept.StringMember(d.Parameters, "environment") == "staging":
			return intercept.Decision{Verdict: intercept.Allow, Reason: "staging only"}, nil
		}
		return intercept.Decision{Verdict: intercept.Deny, Reason: "not allowed", Mode: intercept.ModeToolResult}, nil
	})
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "http", URL: up.URL + "/mcp"},
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperMRTRStdio$"}, Env: map[string]string{"SLUICE_TEST_MRTR_STDIO": "1"}},
	}}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	stateRE := regexp.MustCompile(`"requestState":"([^"]*)"`)
	for _, route := range []string{"http", "stdio"} {
		t.Run(route, func(t *testing.T) {
			u := gw.URL + "/mcp/" + route
			n := 0
			call := func(who, tool, args, extra string) string {
				t.Helper()
				n++
				h := modernHeaders("tools/call", tool)
				h["X-Test-Principal"] = who
				_, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":`+itoa(n)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+extra+
					`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"`+who+`","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
				return body
			}
			answer := func(key, content, state string) string {
				s := `,"inputResponses":{"` + key + `":{"action":"accept","content":` + content + `}}`
				if state != "" {
					s += `,"requestState":"` + state + `"`
				}
				return s
			}
			refused := func(body string) bool {
				return strings.Contains(body, "-32602") && strings.Contains(body, "requestState")
			}

			// Forged: the state names another environment than policy saw.
			first := call("alice", "deploy", `{"environment":"staging"}`, "")
			if !strings.Contains(first, `"resultType":"input_required"`) || !strings.Contains(first, `"requestState":"env=staging"`) {
				t.Fatalf("deploy: %s, want input_required with the state env=staging", first)
			}
			if got := call("alice", "deploy", `{"environment":"staging"}`, answer("confirm", `{"approve":true}`, "env=production")); strings.Contains(got, "deployed to production") || !refused(got) {
				t.Errorf("deploy staging with a forged state: %s, want it refused with -32602", got)
			}
			for _, variant := range []string{"RequestState", "requeststate"} {
				body := strings.Replace(answer("confirm", `{"approve":true}`, "env=production"), `"requestState"`, `"`+variant+`"`, 1)
				if got := call("alice", "deploy", `{"environment":"staging"}`, body); strings.Contains(got, "deployed to production") || !strings.Contains(got, "-32602") {
					t.Errorf("deploy staging with %s: %s, want it refused with -32602", variant, got)
				}
			}
			// The state it issued, for the call it answered, goes through.
			if got := call("alice", "deploy", `{"environment":"staging"}`, answer("confirm", `{"approve":true}`, "env=staging")); !strings.Contains(got, "deployed to staging") {
				t.Errorf("deploy staging with its own state: %s", got)
			}

			// Another agent's: alice's user logs in, bob uses her state.
			if got := call("alice", "statement", `{}`, ""); !strings.Contains(got, `"login"`) {
				t.Fatalf("statement: %s, want the login question", got)
			}
			second := call("alice", "statement", `{}`, answer("login", `{"account":"alice-42"}`, ""))
			st := stateRE.FindStringSubmatch(second)
			if st == nil {
				t.Fatalf("statement after login: %s, want a requestState", second)
			}
			if got := call("bob", "statement", `{}`, answer("confirm", `{"approve":true}`, st[1])); strings.Contains(got, "alice-42") || !refused(got) {
				t.Errorf("bob's statement with alice's state: %s, want it refused with -32602", got)
			}
			// Nor does it answer another call of alice's own.
			if got := call("alice", "deploy", `{"environment":"staging"}`, answer("confirm", `{"approve":true}`, st[1])); !refused(got) {
				t.Errorf("alice's deploy with her statement's state: %s, want it refused with -32602", got)
			}
			if got := call("alice", "statement", `{}`, answer("confirm", `{"approve":true}`, st[1])); !strings.Contains(got, "statement of alice-42") {
				t.Errorf("alice's own statement: %s", got)
			}

			// mcp-go's client runs the round trip itself.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			trans, err := mcptransport.NewStreamableHTTP(u)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans, client.WithElicitationHandler(elicitFunc(func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true}}}, nil
			})))
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "mcpgo-user", Version: "1"}}}); err != nil {
				t.Fatalf("Initialize: %v", err)
			}
			if got := c.ProtocolVersion(); got != mcp.ProtocolVersion20260728 {
				t.Fatalf("negotiated %q, want %q", got, mcp.ProtocolVersion20260728)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{"environment": "staging"}}})
			if err != nil || res.IsError || text(res) != "deployed to staging" {
				t.Errorf("mcp-go client's deploy: %+v, %v", res, err)
			}

			// The same on /ws, where the relay carries the answers.
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/"+route,
				http.Header{"Sec-WebSocket-Protocol": {"mcp"}, "X-Test-Principal": {"alice"}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			wsCall := func(id, extra string) string {
				t.Helper()
				m := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"deploy","arguments":{"environment":"staging"}` + extra +
					`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"alice","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
				if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
					t.Fatal(err)
				}
				ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				for {
					_, b, err := ws.ReadMessage()
					if err != nil {
						t.Fatalf("/ws: no answer to %s: %v", id, err)
					}
					if strings.Contains(string(b), `"id":`+id+`,`) || strings.Contains(string(b), `"id":`+id+`}`) {
						return string(b)
					}
				}
			}
			if got := wsCall("101", ""); !strings.Contains(got, `"requestState":"env=staging"`) {
				t.Fatalf("/ws deploy: %s, want input_required with the state env=staging", got)
			}
			if got := wsCall("102", answer("confirm", `{"approve":true}`, "env=production")); strings.Contains(got, "deployed to production") || !refused(got) {
				t.Errorf("/ws deploy staging with a forged state: %s, want it refused with -32602", got)
			}
			if got := wsCall("103", answer("confirm", `{"approve":true}`, "env=staging")); !strings.Contains(got, "deployed to staging") {
				t.Errorf("/ws deploy staging with its own state: %s", got)
			}
		})
	}
}

// TestMCPHeadersOnce: Mcp-Method, Mcp-Name and Mcp-Protocol-Version are
// forwarded as the client sent them, for whatever routes on them (MCP
// 2026-07-28 has them so that gateways, rate limiters and WAFs need not
// read bodies). The gateway compared only the first value of each: a
// second Mcp-Name: send_email behind Mcp-Name: echo went upstream with the
// echo call, to be read by anything that takes the last value (or, as
// Node does, both joined). Each must appear once (400, -32020), and
// nothing reaches the upstream.
func TestMCPHeadersOnce(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	call := modernCall(1, "echo", `{"message":"hi"}`)
	for _, tc := range []struct{ header, first, second string }{
		{"Mcp-Name", "echo", "send_email"},
		{"Mcp-Method", "tools/call", "tools/list"},
		{"Mcp-Protocol-Version", "2026-07-28", "2025-06-18"},
	} {
		t.Run(tc.header, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, f.gw.URL+"/mcp/demo", strings.NewReader(call))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "echo") {
				req.Header.Set(k, v)
			}
			req.Header[tc.header] = []string{tc.first, tc.second}
			before := f.rec.n.Load()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || errorCode(t, string(b)) != intercept.CodeHeaderMismatch || f.rec.n.Load() != before {
				t.Errorf("two %s headers: got %d %s (upstream reached: %v), want 400 and -32020 before the upstream", tc.header, resp.StatusCode, b, f.rec.n.Load() != before)
			}
		})
	}
}

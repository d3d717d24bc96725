package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// barrierServer is an mcp-go server whose deploy tool, as mrtrServer's,
// answers input_required with the state "env=" + its environment, and
// deploys to the state's environment on the retry; the first answers wait
// until n calls have arrived, so that n clients' calls are all in flight
// through the gateway at once.
func barrierServer(n int) *server.MCPServer {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	s := server.NewMCPServer("mrtr-barrier", "1.0.0", server.WithToolCapabilities(true))
	confirm := mcp.ElicitationParams{Message: "Proceed?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"approve": map[string]any{"type": "boolean"}}}}
	s.AddTool(mcp.NewTool("deploy", mcp.WithString("environment", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if st := req.Params.RequestState; st != "" {
				return mcp.NewToolResultText("deployed to " + strings.TrimPrefix(st, "env=")), nil
			}
			mu.Lock()
			if arrived++; arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return server.NewInputRequestBuilder("env="+req.GetString("environment", "")).Elicit("confirm", confirm).ToolResult(), nil
		})
	return s
}

// TestHelperBarrierStdio is barrierServer(2) as a stdio server, run as a
// child process by TestRequestStatePerExchange; on its own it does
// nothing.
func TestHelperBarrierStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_BARRIER_STDIO") != "1" {
		return
	}
	_ = server.ServeStdio(barrierServer(2))
	os.Exit(0)
}

// TestRequestStatePerExchange: a 2026-07-28 request belongs to no
// session, so the gateway told the answers of two stateless clients apart
// by agent and JSON-RPC id alone. Two clients with one agent name (two
// replicas of one agent, two users of one API key) sending id 1 at the
// same moment shared one entry: the second call's binding replaced the
// first's, so the first answer's requestState was bound to the other
// call's arguments (state "env=staging" accepted with {"environment":
// "dev"}, where the upstream acts on the state) and the second answer's
// state was never recorded (its legitimate retry refused). The result-scan
// table (classifier scan_results) had the same key: one answer was handed
// to OnResult with the other call's descriptor, the other never scanned.
// Each exchange is its own key.
func TestRequestStatePerExchange(t *testing.T) {
	for _, route := range []string{"http", "stdio"} {
		t.Run(route, func(t *testing.T) {
			var mu sync.Mutex
			scanned := map[string][]string{} // call's environment -> states of the results scanned for it
			ic := &intercept.Interceptor{
				Decider: intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
					return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed"}, nil
				}),
				OnResult: func(d *intercept.ActionDescriptor, result jsontext.Value) {
					mu.Lock()
					defer mu.Unlock()
					env := intercept.StringMember(d.Parameters, "environment")
					scanned[env] = append(scanned[env], intercept.StringMember(result, "requestState"))
				},
			}
			up := Upstream{Name: route, Command: os.Args[0], Args: []string{"-test.run=^TestHelperBarrierStdio$"}, Env: map[string]string{"SLUICE_TEST_BARRIER_STDIO": "1"}}
			if route == "http" {
				srv := httptest.NewServer(server.NewStreamableHTTPServer(barrierServer(2)))
				t.Cleanup(srv.Close)
				up = Upstream{Name: route, URL: srv.URL + "/mcp"}
			}
			g, err := New(Options{Upstreams: []Upstream{up}}, ic, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := principalGateway(t, g)
			u := gw.URL + "/mcp/" + route
			call := func(env, extra string) string {
				h := modernHeaders("tools/call", "deploy")
				h["X-Test-Principal"] = "alice"
				_, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{"environment":"`+env+`"}`+extra+
					`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"alice","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
				return body
			}
			retry := func(state string) string {
				return `,"inputResponses":{"confirm":{"action":"accept","content":{"approve":true}}},"requestState":"` + state + `"`
			}
			envs := []string{"staging", "dev"}
			first := make([]string, len(envs))
			var wg sync.WaitGroup
			for i, env := range envs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					first[i] = call(env, "")
				}()
			}
			wg.Wait()
			for i, env := range envs {
				if !strings.Contains(first[i], `"requestState":"env=`+env+`"`) {
					t.Fatalf("deploy %s: %s, want input_required with the state env=%s", env, first[i], env)
				}
			}
			// A result is scanned after the client has it: on the stdio
			// bridge, after the answer was written; wait for both.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				mu.Lock()
				n := len(scanned["staging"]) + len(scanned["dev"])
				mu.Unlock()
				if n >= len(envs) || time.Now().After(deadline) {
					break
				}
			}
			mu.Lock()
			for _, env := range envs {
				if got := scanned[env]; len(got) != 1 || got[0] != "env="+env {
					t.Errorf("results scanned for the %s call: %q, want its own answer's once ([env=%s])", env, got, env)
				}
			}
			mu.Unlock()
			// Each state is good for its own call, and only for it.
			if got := call("dev", retry("env=staging")); strings.Contains(got, "deployed to staging") || !strings.Contains(got, "-32602") {
				t.Errorf("deploy dev with the staging call's state: %s, want it refused with -32602", got)
			}
			if got := call("staging", retry("env=dev")); strings.Contains(got, "deployed to dev") || !strings.Contains(got, "-32602") {
				t.Errorf("deploy staging with the dev call's state: %s, want it refused with -32602", got)
			}
			for _, env := range envs {
				if got := call(env, retry("env="+env)); !strings.Contains(got, "deployed to "+env) {
					t.Errorf("deploy %s with its own state: %s, want it deployed", env, got)
				}
			}
		})
	}
}

package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
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
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	p, err := policy.Compile([]byte(carryPolicy), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: up.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw = httptest.NewServer(g.Handler())
	t.Cleanup(func() { gw.Close(); g.Close() })
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

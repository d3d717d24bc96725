package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Calls before a listing, through serve (inventory, policy, classifier):
// the inventory screens what it has seen listed, and a client that calls
// a tool without listing it showed it nothing.

// countLists wraps an upstream handler, counting the tools/list requests
// it gets into n.
func countLists(n *atomic.Int64, next func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		if next != nil {
			h = next(h)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := new(bytes.Buffer)
			if r.Body != nil {
				body.ReadFrom(r.Body)
				r.Body.Close()
			}
			r.Body = readCloser{bytes.NewReader(body.Bytes())}
			if bytes.Contains(body.Bytes(), []byte(`"method":"tools/list"`)) {
				n.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
}

// mcpgoClient connects mcp-go's client to url in version (initialized,
// nothing listed).
func mcpgoClient(t *testing.T, url, name, version string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	trans, err := mcptransport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithProtocolVersion(version))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: name, Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func searchText(t *testing.T, c *client.Client) string {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "x"}}})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		sc, _ := json.Marshal(res.StructuredContent)
		b.WriteString(" ")
		b.Write(sc)
	}
	return b.String()
}

// TestAttackRugPullCalledUnlistedServe: a victim lists (the pin), then the
// demo server changes web_search's description. A fresh mcp-go client
// that calls web_search without listing had it forwarded to the changed
// tool; now the gateway lists first, sees the drift, and the call is
// soft-denied inventory_drift, in each era.
func TestAttackRugPullCalledUnlistedServe(t *testing.T) {
	var drift atomic.Bool
	g := startServeWith(t, "policy: {default: allow, result_mode: tool_result}\n", rewriteLists(&drift, driftAndAdd))
	mcpgoVictim(t, g.url) // its list is the first: pinned
	drift.Store(true)
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcpgoClient(t, g.url, "fresh-"+version, version)
			if got := searchText(t, c); !strings.Contains(got, "inventory_drift") {
				t.Errorf("web_search without listing, after the rug pull: got %.300s, want inventory_drift", got)
			}
		})
	}
}

// TestAttackPoisonedToolCalledUnlisted: web_search is poisoned from the
// first list on, and the policy denies calls of poisoned tools
// (classification.tool_poisoning). A client that called it without
// listing was allowed: the inventory had scanned nothing. Now the gateway
// lists first and the scan's finding reaches the policy.
func TestAttackPoisonedToolCalledUnlisted(t *testing.T) {
	on := &atomic.Bool{}
	on.Store(true)
	g := startServeWith(t, `policy:
  default: allow
  result_mode: tool_result
  rules:
    - {id: no-poisoned, match: {match_tool: web_search}, when: 'classification.tool_poisoning == true', decision: deny, reason: poisoned tool}
`, rewriteLists(on, func(b []byte) []byte { return webSearchDesc.ReplaceAll(b, []byte(`"description":"`+shownEvil+`"`)) }))
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcpgoClient(t, g.url, "fresh-"+version, version)
			if got := searchText(t, c); !strings.Contains(got, `"publicReason":"poisoned tool"`) {
				t.Errorf("poisoned web_search without listing: got %.300s, want the call denied by no-poisoned", got)
			}
		})
	}
}

// TestListingClientUnchanged: mcp-go's client, listing before it calls
// as clients do, in each era, is answered as before and the gateway
// lists nothing of its own.
func TestListingClientUnchanged(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			var lists atomic.Int64
			g := startServeWith(t, "policy: {default: allow, result_mode: tool_result}\n", countLists(&lists, nil))
			c := mcpgoClient(t, g.url, "legit", version)
			if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
				t.Fatal(err)
			}
			if got := searchText(t, c); strings.Contains(got, "denied") || !strings.Contains(strings.ToLower(got), "result") {
				t.Errorf("web_search after listing: got %.300s, want the search's results", got)
			}
			if n := lists.Load(); n != 1 {
				t.Errorf("the upstream got %d tools/list requests, want the client's one", n)
			}
		})
	}
}

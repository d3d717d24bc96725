package gateway

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAggregate2026 runs mcp-go's client with its default, MCP 2026-07-28
// (stateless: server/discover, then each request on its own): the merged
// list, a call routed to the right upstream and decided there; a request
// whose Mcp-Name header names another tool than its body is refused.
func TestAggregate2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}})
	trans, err := mcptransport.NewStreamableHTTP(f.url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "modern-agent"}}})
	if err != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	names := toolNames(t, ctx, c)
	if !slices.Contains(names, "echo") || !slices.Contains(names, "other_echo") {
		t.Fatalf("tools/list over 2026-07-28: %v", names)
	}
	if txt, _ := callText(t, ctx, c, "other_echo", map[string]any{"message": "stateless"}); !strings.Contains(txt, "stateless") {
		t.Errorf("other_echo: %q", txt)
	}
	if got := f.dec.last(); got != "other/echo" {
		t.Errorf("policy saw %q, want other/echo", got)
	}
	txt, isErr := callText(t, ctx, c, "other_add", map[string]any{"a": 1, "b": 2})
	if !isErr || !strings.Contains(txt, "not allowed") {
		t.Errorf("other_add over 2026-07-28: %q (error %v), want the soft deny", txt, isErr)
	}
	// Smuggling: the header says echo, the body calls other_add.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	code, _, body := post(t, f.url+"/mcp", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"},
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"other_add","arguments":{"a":1,"b":2},`+meta+`}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "header mismatch") {
		t.Errorf("mismatched Mcp-Name: %d %s", code, body)
	}
}

// TestAggregateClientThatStays2025: a client asking for 2025-11-25 gets a
// session, as before.
func TestAggregateClientThatStays2025(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo"}})
	c := aggClient(t, ctx, f.url+"/mcp")
	if l, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil || len(l.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", l, err)
	}
}

// TestAggregateProgress: a call's progress notifications reach the client
// through the virtual server as they come, in both eras (the answer is an
// SSE stream whose last event is the result).
func TestAggregateProgress(t *testing.T) {
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}})
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			trans, err := mcptransport.NewStreamableHTTP(f.url + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans, client.WithProtocolVersion(version))
			var progress atomic.Int64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					progress.Add(1)
				}
			})
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version, ClientInfo: mcp.Implementation{Name: "p"}}}); err != nil {
				t.Fatal(err)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "other_slow_count",
				Arguments: map[string]any{"n": 3, "delay_ms": 25}, Meta: &mcp.Meta{ProgressToken: "p1"}}})
			if err != nil || res.IsError {
				t.Fatalf("other_slow_count: %v %+v", err, res)
			}
			if got := progress.Load(); got != 3 {
				t.Errorf("progress notifications through the virtual server: %d, want 3", got)
			}
			if got := f.dec.last(); got != "other/slow_count" {
				t.Errorf("policy saw %q", got)
			}
		})
	}
}

package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestAttackReadSourceRemembered: a source classed as a resource or a
// prompt (resource:URI, prompt:NAME) read with resources/read or
// prompts/get, on the route or the virtual server, in a 2025-11-25 session
// or as a 2026-07-28 request, is in the agent's route memory: its network
// sink in another session is denied.
func TestAttackReadSourceRemembered(t *testing.T) {
	s := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	s.AddResource(mcp.NewResource("file:///srv/secret/pay.csv", "pay"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "alice,42"}}, nil
	})
	s.AddPrompt(mcp.NewPrompt("payroll"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("payroll", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("alice,42"))}), nil
	})
	s.AddTool(mcp.NewTool("send_out", mcp.WithString("text")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("sent"), nil
	})
	gwURL, rec := sinkAfterSourceGateway(t, s, `  "resource:file:///srv/secret/*": [source:sensitive]
  prompt:payroll: [source:sensitive]
  send_out: [sink:network]
`)
	route, virtual := gwURL+"/mcp/up", gwURL+"/mcp"

	reads := []struct{ method, name, params string }{
		{"resources/read", "file:///srv/secret/pay.csv", `"uri":"file:///srv/secret/pay.csv"`},
		{"prompts/get", "payroll", `"name":"payroll"`},
	}
	n := 0
	for _, rd := range reads {
		for _, how := range []string{"route session", "virtual session", "route 2026"} {
			n++
			agent, text := fmt.Sprintf("agent-%d", n), fmt.Sprintf("exfil-%d", n)
			t.Run(rd.method+"/"+how, func(t *testing.T) {
				var body string
				switch how {
				case "route session", "virtual session":
					u := route
					if how == "virtual session" {
						u = virtual
					}
					_, _, body = post(t, u, openSession(t, u, agent, nil), `{"jsonrpc":"2.0","id":1,"method":"`+rd.method+`","params":{`+rd.params+`}}`)
				default:
					_, _, body = post(t, route, modernHeaders(rd.method, rd.name),
						`{"jsonrpc":"2.0","id":1,"method":"`+rd.method+`","params":{`+rd.params+`,"_meta":{`+meta2026+`,`+clientMeta(agent)+`}}}`)
				}
				if !strings.Contains(body, "alice,42") {
					t.Fatalf("the read: got %s", body)
				}
				_, _, got := post(t, route, openSession(t, route, agent, nil), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_out","arguments":{"text":"`+text+`"}}}`)
				if !strings.Contains(got, "no-network-after-sensitive-read") || rec.count(text) > 0 {
					t.Errorf("send_out after the read: got %s, want the route rule's denial", got)
				}
			})
		}
	}
}

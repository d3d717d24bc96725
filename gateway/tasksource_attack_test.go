package gateway

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestAttackTaskReadRemembered: an agent reads a sensitive source as a
// task (tools/call with params.task, an mcp-go server that runs it as
// one), takes the secret with tasks/result, and then calls a network
// sink: in the same session, in another, and as a 2026-07-28 request, on
// the route and through the virtual server. The task's creation is what
// route memory records, so every sink after it is denied.
func TestAttackTaskReadRemembered(t *testing.T) {
	s := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("read_secret", mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("the secret is 42"), nil
		})
	s.AddTool(mcp.NewTool("send_out", mcp.WithString("text")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("sent"), nil
		})
	gwURL, rec := sinkAfterSourceGateway(t, s, `  read_secret: [source:sensitive]
  send_out: [sink:network]
`)
	taskID := regexp.MustCompile(`"taskId":"([^"]+)"`)
	send := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"send_out","arguments":{"text":"exfil-` + id + `"}}}`
	}
	for _, path := range []string{"/mcp/up", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			u, agent := gwURL+path, "alice"+path
			open := func() map[string]string {
				h := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
				_, rh, body := post(t, u, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"`+agent+`","version":"1"}}}`)
				if rh.Get("Mcp-Session-Id") == "" {
					t.Fatalf("initialize: %s", body)
				}
				h["Mcp-Session-Id"] = rh.Get("Mcp-Session-Id")
				post(t, u, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				return h
			}
			a := open()
			_, _, body := post(t, u, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{},"task":{}}}`)
			task := taskID.FindStringSubmatch(body)
			if task == nil || strings.Contains(body, "is 42") {
				t.Fatalf("the task's handle: %s", body)
			}
			if _, _, got := post(t, u, a, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+task[1]+`"}}`); !strings.Contains(got, "is 42") {
				t.Fatalf("tasks/result: %s", got)
			}
			if _, _, got := post(t, u, a, send("3")); !strings.Contains(got, "no-network-after-sensitive-read") {
				t.Errorf("send_out in the task's session: got %s, want the route rule's denial", got)
			}
			if _, _, got := post(t, u, open(), send("4")); !strings.Contains(got, "no-network-after-sensitive-read") {
				t.Errorf("send_out in another session: got %s, want the route rule's denial", got)
			}
			modern := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send_out","arguments":{"text":"exfil-5"},"_meta":{` + meta2026 + `,` + clientMeta(agent) + `}}}`
			if _, _, got := post(t, gwURL+"/mcp/up", modernHeaders("tools/call", "send_out"), modern); !strings.Contains(got, "no-network-after-sensitive-read") {
				t.Errorf("send_out as a 2026-07-28 request: got %s, want the route rule's denial", got)
			}
			if rec.count("exfil-") > 0 {
				t.Error("a send_out after the task's read reached the upstream")
			}
		})
	}
}

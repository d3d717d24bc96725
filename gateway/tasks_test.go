package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// An MCP task (a tools/call answered with a task handle) is its creator's:
// the HTTP upstream sees the gateway's credentials for every agent, so
// another agent naming the task (tasks/get, tasks/result, tasks/cancel) is
// told "task not found" and does not see it in tasks/list, on 2025-era
// sessions (JSON and SSE answers) and 2026-07-28 stateless requests alike.
func TestTasksOwnedOverHTTP(t *testing.T) {
	s := server.NewMCPServer("taskserver", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("read_secret", mcp.WithString("owner", mcp.Required()), mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("the secret of " + req.GetString("owner", "") + " is 42"), nil
		})
	up := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "tasks", URL: up.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"read_secret"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/tasks"
	taskID := regexp.MustCompile(`"taskId":"([^"]+)"`)

	for _, accept := range []string{"application/json, text/event-stream", "application/json"} {
		t.Run("2025-11-25/"+accept, func(t *testing.T) {
			open := func(who string) map[string]string {
				h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": who, "Accept": accept}
				_, rh, body := post(t, u, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"c","version":"1"}}}`)
				if rh.Get("Mcp-Session-Id") == "" {
					t.Fatalf("initialize: %s", body)
				}
				h["Mcp-Session-Id"] = rh.Get("Mcp-Session-Id")
				post(t, u, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				return h
			}
			alice, bob := open("alice"), open("bob")
			_, _, body := post(t, u, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{"owner":"alice"},"task":{}}}`)
			task := taskID.FindStringSubmatch(body)
			if task == nil {
				t.Fatalf("alice's task: %s", body)
			}
			for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				_, _, got := post(t, u, bob, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"taskId":"`+task[1]+`"}}`)
				if !strings.Contains(got, "task not found") || strings.Contains(got, "is 42") {
					t.Errorf("bob's %s on alice's task: %s", method, got)
				}
			}
			// (mcp-go also sends bob's stream a notifications/tasks/status
			// of alice's task; only the answer is looked at here.)
			if _, rh, got := post(t, u, bob, `{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`); strings.Contains(string(responseTo(t, rh, got, "3").Raw), task[1]) {
				t.Errorf("bob's tasks/list shows alice's task: %s", got)
			}
			if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"`+task[1]+`"}}`); !strings.Contains(got, "the secret of alice is 42") {
				t.Errorf("alice's own tasks/result: %s", got)
			}
			if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":5,"method":"tasks/list","params":{}}`); !strings.Contains(got, task[1]) {
				t.Errorf("alice's own tasks/list: %s", got)
			}
		})
	}
	t.Run("2026-07-28", func(t *testing.T) {
		meta := func(who string) string {
			return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + who + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		}
		as := func(who string, h map[string]string) map[string]string { h["X-Test-Principal"] = who; return h }
		_, _, body := post(t, u, as("alice", modernHeaders("tools/call", "read_secret")),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{"owner":"alice"},"task":{},`+meta("alice")+`}}`)
		task := taskID.FindStringSubmatch(body)
		if task == nil {
			t.Fatalf("alice's task: %s", body)
		}
		_, _, got := post(t, u, as("bob", modernHeaders("tasks/get", task[1])), `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta("bob")+`}}`)
		if !strings.Contains(got, "task not found") {
			t.Errorf("bob's tasks/get on alice's task: %s", got)
		}
		_, _, got = post(t, u, as("alice", modernHeaders("tasks/get", task[1])), `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta("alice")+`}}`)
		if !strings.Contains(got, task[1]) || strings.Contains(got, `"error"`) {
			t.Errorf("alice's own tasks/get: %s", got)
		}
	})
}

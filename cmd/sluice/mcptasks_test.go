package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestMCPTasksAcrossReplicas: with agent_tasks in Redis an MCP task
// created through one replica is its creator's through another and still
// not another agent's; a replica without it does not know the task; with
// Redis down a replica that never saw the task answers "task not found".
// The upstream is one mcp-go Streamable HTTP server behind every replica,
// as behind a load balancer, spoken to in the stateless 2026-07-28 era.
func TestMCPTasksAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	s := server.NewMCPServer("taskserver", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("read_secret", mcp.WithString("owner", mcp.Required()), mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("the secret of " + req.GetString("owner", "") + " is 42"), nil
		})
	up := server.NewStreamableHTTPServer(s)
	same := func(http.Handler) http.Handler { return up }

	cfg := "agent_header: X-Agent\npolicy: {default: allow}\n"
	shared := cfg + "agent_tasks: {redis_url: \"" + srv.URL() + "\"}\n"
	a, b, c, lone := startServeWith(t, shared, same), startServeWith(t, shared, same), startServeWith(t, shared, same), startServeWith(t, cfg, same)
	call := func(r *running, who, method, name, params string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		req.Header.Set("X-Agent", who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	created := call(a, "alice", "tools/call", "read_secret", `"name":"read_secret","arguments":{"owner":"alice"},"task":{}`)
	m := regexp.MustCompile(`"taskId":"([^"]+)"`).FindStringSubmatch(created)
	if m == nil {
		t.Fatalf("alice's task through A: %s", created)
	}
	task := m[1]
	get := func(r *running, who string) string { return call(r, who, "tasks/get", task, `"taskId":"`+task+`"`) }
	if got := get(b, "alice"); strings.Contains(got, "not found") || !strings.Contains(got, task) {
		t.Errorf("alice's task through B: %s", got)
	}
	if got := get(c, "bob"); !strings.Contains(got, "task not found") {
		t.Errorf("bob on alice's task through C: %s", got)
	}
	if got := get(lone, "alice"); !strings.Contains(got, "task not found") {
		t.Errorf("a replica without agent_tasks: %s", got)
	}
	d := startServeWith(t, shared, same) // never sees the task, and cannot ask
	srv.Stop()
	if got := get(d, "alice"); !strings.Contains(got, "task not found") {
		t.Errorf("with Redis down, a replica that never saw the task: %s", got)
	}
}

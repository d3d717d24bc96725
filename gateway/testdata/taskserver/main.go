// Command taskserver is an mcp-go stdio server with MCP tasks
// (2025-11-25) enabled: read_secret may run as a task, whose result is
// then read with tasks/result. Used by TestStatelessTasksShared.
package main

import (
	"context"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("taskserver", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("read_secret",
		mcp.WithString("owner", mcp.Required()),
		mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("the secret of " + req.GetString("owner", "") + " is 42"), nil
		})
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}

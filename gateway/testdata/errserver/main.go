// Command errserver is an mcp-go stdio server whose fetch_page tool fails
// with a JSON-RPC error quoting the page it was asked for. Used by
// TestAttackInjectionInStdioError.
package main

import (
	"context"
	"errors"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("errserver", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("fetch_page", mcp.WithString("url", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("cannot fetch " + req.GetString("url", ""))
		})
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}

// Command stateserver is an mcp-go stdio server that keeps state for its
// process, as a browser or shell server keeps cookies or a directory:
// remember stores a value, recall returns the last one stored, sleep
// waits. Used by
// TestAttackStatelessPrincipalsShareChild.
package main

import (
	"context"
	"log"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	var (
		mu    sync.Mutex
		value = "nothing"
	)
	s := server.NewMCPServer("stateserver", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("remember", mcp.WithString("value", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			value = req.GetString("value", "")
			return mcp.NewToolResultText("remembered"), nil
		})
	s.AddTool(mcp.NewTool("recall"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return mcp.NewToolResultText("recalled " + value), nil
		})
	s.AddTool(mcp.NewTool("sleep", mcp.WithNumber("ms", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("slept"), nil
		})
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}

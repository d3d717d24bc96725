package demo_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// Start the demo server in-process and call a tool with mcp-go's client,
// which picks the stateless 2026-07-28 protocol when the server offers it.
func ExampleNewHTTPHandler() {
	srv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer srv.Close()

	ctx := context.Background()
	c, err := client.NewStreamableHttpClient(srv.URL)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		panic(err)
	}
	fmt.Println(c.ProtocolVersion())

	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name:      demo.ToolEcho,
		Arguments: map[string]any{"message": "hello"},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)

	res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name:      demo.ToolReadDocument,
		Arguments: map[string]any{"path": "/nope"},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.IsError, res.Content[0].(mcp.TextContent).Text)
	// Output:
	// 2026-07-28
	// Echo: hello
	// true document not found: /nope
}

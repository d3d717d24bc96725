// Package demo is a small, realistic MCP server used by Sluice's quickstart
// and end-to-end tests as the upstream that the gateway governs.
//
// It is built on mcp-go and serves both protocol eras: the initialize
// handshake with sessions (2025-06-18, 2025-11-25) and the stateless core
// with server/discover (2026-07-28). Its tools cover the cases a governance
// gateway has to tell apart: read-only local tools (echo, add,
// read_document), an open-world read (web_search), an open-world write
// (send_email), a long-running call with progress and cancellation
// (slow_count), and a tool that changes another tool's description at run
// time (rotate_description) to exercise drift detection.
//
// Nothing leaves the process: the document store lives in memory, search
// results are canned and e-mail is only pretended to be queued.
//
// Usage, in a test:
//
//	srv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
//	defer srv.Close()
//	c, _ := client.NewStreamableHttpClient(srv.URL)
//	// Start, Initialize, then CallTool "echo" {"message": "hi"} returns "Echo: hi".
package demo

package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAttackVirtualAnswerOutsideSession: through a virtual server the
// client has one session, and policy sees it (route rules of session
// scope, the default): a sensitive read through docs closes web to data
// for that session. The client's answer to web's sampling request is a
// carry (mcp:response), closed with it. But the answer went to web's
// route without the virtual session, so policy decided it in web's inner
// session, which had read nothing: the client's answer, the data, reached
// the closed upstream.
func TestAttackVirtualAnswerOutsideSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	up, web := tapServer(t)
	gw := sessionCarryGateway(t, up.URL)

	trans, err := mcptransport.NewStreamableHTTP(gw.URL+"/mcp", mcptransport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithSamplingHandler(sampler("SECRET-sampled")), client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "raw", Version: "1"}, Capabilities: mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}}}); err != nil {
		t.Fatal(err)
	}
	if got, isErr := callText(t, ctx, c, "ask", map[string]any{"query": "q"}); isErr || !strings.Contains(got, "SECRET-sampled") {
		t.Fatalf("sampling while open: got %q (error %v), want the client's answer to reach web", got, isErr)
	}
	web.mu.Lock()
	web.posts = nil
	web.mu.Unlock()
	if txt, isErr := callText(t, ctx, c, "read_document", map[string]any{"path": "/hr/salaries.csv"}); isErr {
		t.Fatalf("sensitive read: %s", txt)
	}
	if txt, isErr := callText(t, ctx, c, "web_search", map[string]any{"query": "q"}); !isErr {
		t.Fatalf("web_search after the read in the same session: %q, want it denied (the route rule holds for calls)", txt)
	}
	// How the tool ends is mcp-go's to decide (under load its server may
	// not end it at once: TestCarrySamplingAnswer); what matters is where
	// the client's answer went.
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	res, err := c.CallTool(actx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"query": "q"}}})
	if web.reached("SECRET-sampled") {
		t.Errorf("sampling after the read: the client's answer reached the closed upstream (tool said %v, error %v)", res, err)
	}
}

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
	// The upstream's tool ends at once with the gateway's error: the
	// answer withheld is not dropped as one to nothing asked, however
	// soon the client answers (TestCarrySamplingAnswer).
	got, isErr := callText(t, ctx, c, "ask", map[string]any{"query": "q"})
	if web.reached("SECRET-sampled") {
		t.Errorf("sampling after the read: the client's answer reached the closed upstream (tool said %q, error %v)", got, isErr)
	}
	if !isErr || !strings.Contains(got, "withheld by the gateway's policy") {
		t.Errorf("sampling after the read: got %q (error %v), want the upstream's tool to fail at once with the gateway's error", got, isErr)
	}
}

package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestAggregateReadRateLimited (found by an attacker review): a read of a URI made from a template (no
// list names it) is tried on each upstream in turn. When the upstream
// that serves it refuses it with rate_limited, the client must get that
// answer — a refusal with a retry hint — not the next upstream's "no such
// resource", and the upstreams after it must not be asked (each ask takes
// tokens from their own buckets).
func TestAggregateReadRateLimited(t *testing.T) {
	var served atomic.Int64
	files := mcpgoserver.NewMCPServer("files", "1", mcpgoserver.WithResourceCapabilities(false, false))
	files.AddResourceTemplate(mcp.NewResourceTemplate("file:///{name}", "files"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		served.Add(1)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "contents"}}, nil
	})
	upFiles := httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(files))
	defer upFiles.Close()
	other := mcpgoserver.NewMCPServer("other", "1", mcpgoserver.WithResourceCapabilities(false, false))
	upOther := httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(other))
	defer upOther.Close()

	gate := &govern.RateGate{Next: &intercept.StaticDecider{Default: intercept.Allow}, Limiter: ratelimit.NewLocal(ratelimit.LocalOptions{}), Rules: []govern.RateRule{
		{ID: "file-reads", By: []string{"principal"}, Upstream: "files", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}},
	}}
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "files", URL: upFiles.URL + "/mcp"}, {Name: "other", URL: upOther.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
	}, &intercept.Interceptor{Decider: gate}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	_, h, _ := post(t, srv.URL+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice"}}}`)
	sid := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")}
	const read = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///notes.txt"}}`
	if _, _, body := post(t, srv.URL+"/mcp", sid, read); !strings.Contains(body, "contents") {
		t.Fatalf("first read: %s", body)
	}
	_, _, body := post(t, srv.URL+"/mcp", sid, read)
	if !strings.Contains(body, "rate_limited") || !strings.Contains(body, "retry_after_ms") {
		t.Errorf("second read under 1/h through /mcp: %s; want the rate_limited refusal with its retry hint", body)
	}
	// The same read on the upstream's own route says so.
	_, h, _ = post(t, srv.URL+"/mcp/files", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice"}}}`)
	if _, _, body := post(t, srv.URL+"/mcp/files", map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")}, read); !strings.Contains(body, "rate_limited") {
		t.Errorf("baseline, /mcp/files: %s", body)
	}
}

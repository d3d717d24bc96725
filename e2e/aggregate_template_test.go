package e2e

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// TestVirtualReadTemplateURIAsTSServerMatchesIt: a virtual server sends a
// resource URI no upstream lists to the upstreams whose resource
// templates it fits. The official TypeScript SDK server matches its
// template doc://item/{id} against doc://item/alice@example.com (a
// simple expression takes any run without a slash) and serves it; fitted
// to the template by RFC 6570's strict character classes, the URI fitted
// none, and the virtual server refused a read its upstream serves.
func TestVirtualReadTemplateURIAsTSServerMatchesIt(t *testing.T) {
	requireV2(t)
	wd, _ := os.Getwd()
	up := startAnnounced(t, "SLUICE_E2E_READY ", "node", filepath.Join(wd, "v2-server.mjs"), "http")
	g, err := gateway.New(gateway.Options{
		Upstreams:      []gateway.Upstream{{Name: "docs", URL: up}},
		VirtualServers: []gateway.VirtualServer{{}},
	}, &intercept.Interceptor{Decider: &agentsSeen{}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := gosdk.NewClient(&gosdk.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, uri := range []string{"doc://item/7", "doc://item/alice@example.com", "doc://item/a:b", "doc://item/café"} {
		res, err := cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Errorf("read %s, which the server's template doc://item/{id} serves: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 || res.Contents[0].Text == "" {
			t.Errorf("read %s: %+v", uri, res.Contents)
		}
	}
	if _, err := cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: "doc://other/7"}); err == nil {
		t.Error("read doc://other/7, which no template of the server fits: not refused")
	}
}

package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// TestVirtualTemplateListFailureNotKept: a virtual session keeps the
// resource templates its upstreams listed, to match the URIs no upstream
// lists. When an upstream's listing failed once (a restart, a timeout)
// the session kept it as listing none, and every read of a URI its
// template makes was refused for the rest of the session, though the
// upstream served it again. A failed listing is asked again at the next
// such read.
func TestVirtualTemplateListFailureNotKept(t *testing.T) {
	files := mcpgoserver.NewMCPServer("files", "1", mcpgoserver.WithResourceCapabilities(false, false))
	files.AddResourceTemplate(mcp.NewResourceTemplate("file:///{name}", "files"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "contents"}}, nil
	})
	h := mcpgoserver.NewStreamableHTTPServer(files)
	var failed atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"resources/templates/list"`)) && failed.CompareAndSwap(false, true) {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	defer up.Close()
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "files", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	_, hd, _ := post(t, srv.URL+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice"}}}`)
	sid := map[string]string{"Mcp-Session-Id": hd.Get("Mcp-Session-Id")}
	const read = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///notes.txt"}}`
	_, _, first := post(t, srv.URL+"/mcp", sid, read)
	if !failed.Load() {
		t.Fatalf("the template listing was not asked: %s", first)
	}
	if _, _, body := post(t, srv.URL+"/mcp", sid, read); !strings.Contains(body, `"contents"`) {
		t.Errorf("read after the upstream's template listing failed once: %s, want it served", body)
	}
}

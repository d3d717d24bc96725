package main

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

func TestWrapDefaultName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		url  string
		want string
	}{
		{args: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}, want: "server-filesystem"},
		{args: []string{"npx", "-y", "@modelcontextprotocol/server-everything@2025.1.1"}, want: "server-everything"},
		{args: []string{"uvx", "mcp-server-fetch"}, want: "mcp-server-fetch"},
		{args: []string{"uv", "run", "--with", "x", "weather.py"}, want: "weather"},
		{args: []string{"/opt/mcp/bin/github-mcp-server", "stdio"}, want: "github-mcp-server"},
		{args: []string{"node", "/srv/my server/build/index.js"}, want: "index"},
		{args: []string{"docker", "run", "-i", "--rm", "mcp/fetch"}, want: "fetch"},
		{url: "https://mcp.example.com/mcp", want: "mcp.example.com"},
		{url: "http://127.0.0.1:9000/mcp", want: "127.0.0.1"},
		{args: []string{"npx"}, want: "wrapped"},
	} {
		if got := wrapName(tc.args, tc.url); got != tc.want {
			t.Errorf("wrapName(%q, %q): got %q, want %q", tc.args, tc.url, got, tc.want)
		}
	}
}

// wrapped is `sluice wrap` run in-process with its stdio on pipes, and an
// MCP client on the other end.
type wrapped struct {
	c     *client.Client
	admin string
	done  chan error
}

func startWrap(t *testing.T, args ...string) *wrapped {
	t.Helper()
	w := startWrapUninitialized(t, args...)
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if _, err := w.c.Initialize(cctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
		t.Fatalf("initialize through wrap %v: %v", args, err)
	}
	return w
}

// startWrapUninitialized is startWrap with the client started, but not
// initialized.
func startWrapUninitialized(t *testing.T, args ...string) *wrapped {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	w := &wrapped{done: make(chan error, 1)}
	ready := make(chan bound, 1)
	go func() {
		err := wrapIO(ctx, args, inR, outW, func(b bound) { ready <- b })
		outW.Close()
		w.done <- err
	}()
	select {
	case b := <-ready:
		w.admin = b.Admin
	case err := <-w.done:
		cancel()
		t.Fatalf("wrap %v: %v", args, err)
	}
	w.c = client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	t.Cleanup(func() {
		w.c.Close()
		inW.Close()
		cancel()
		<-w.done
	})
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	if err := w.c.Start(cctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *wrapped) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := w.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		return "error: " + text(res)
	}
	return text(res)
}

// TestWrapTwoServersOneDataDir: two `sluice wrap` processes with different
// names share a config and a data directory, as a desktop client runs
// them; each keeps its own inventory (no inventory_drift from the other's
// tools), and each binds an admin port of its own.
func TestWrapTwoServersOneDataDir(t *testing.T) {
	demoSrv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer demoSrv.Close()
	fs := server.NewMCPServer("files", "1", server.WithToolCapabilities(false))
	fs.AddTool(mcp.NewTool("list_files", mcp.WithDescription("Lists files.")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("a.txt b.txt"), nil
	})
	filesSrv := httptest.NewServer(server.NewStreamableHTTPServer(fs))
	defer filesSrv.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\nadmin_listen: 127.0.0.1:0\nclassifier: {provider: off}\n"+
		"policy:\n  default: deny\n  rules:\n    - {id: demo-echo, match: {match_tool: demo/echo}, decision: allow}\n"+
		"    - {id: files-list, match: {match_tool: files/list_files}, decision: allow}\n"), 0o600)
	a := startWrap(t, "--name", "demo", "--config", cfg, "--url", demoSrv.URL+"/mcp")
	b := startWrap(t, "--name", "files", "--config", cfg, "--url", filesSrv.URL+"/mcp")
	if got := a.call(t, "echo", map[string]any{"message": "hi"}); !strings.Contains(got, "Echo: hi") {
		t.Errorf("echo on demo: got %q, want the echo", got)
	}
	if got := b.call(t, "list_files", nil); got != "a.txt b.txt" {
		t.Errorf("list_files on files: got %q, want the listing (not inventory_drift, not denied)", got)
	}
	if got := a.call(t, "echo", map[string]any{"message": "again"}); !strings.Contains(got, "Echo: again") {
		t.Errorf("echo on demo after files pinned: got %q, want the echo", got)
	}
	for _, name := range []string{"demo", "files"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "data", "inventory", "*", name+"*")); len(m) == 0 {
			t.Errorf("no inventory snapshot named %s under data/inventory", name)
		}
	}
	if a.admin == "" || b.admin == "" || a.admin == b.admin {
		t.Errorf("admin addresses %q and %q: want two", a.admin, b.admin)
	}
}

// TestWrapAdminListenTaken: a wrap whose admin_listen cannot be bound
// stops with an error naming admin_listen and the way out, instead of
// running with no admin API (and `sluice approvals` reaching another
// gateway).
func TestWrapAdminListenTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\nadmin_listen: "+held.Addr().String()+"\nclassifier: {provider: off}\n"), 0o600)
	err = wrapIO(t.Context(), []string{"--config", cfg, "--url", "http://127.0.0.1:9/mcp"}, strings.NewReader(""), io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "admin_listen") || !strings.Contains(err.Error(), "--admin-listen") {
		t.Errorf("got %v, want an error naming admin_listen and --admin-listen", err)
	}
}

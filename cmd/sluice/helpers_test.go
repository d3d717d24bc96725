package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/bench"
)

// running is a gateway started by serve() in front of the demo server.
type running struct {
	url, admin, dir string
	config          string       // a config file naming the admin address and data directory, for the CLI
	stop            func() error // stops the gateway, returns serve's error
}

// serveLogger, when set, is the logger startServe's gateways log to
// (nil: nothing is logged).
var serveLogger *slog.Logger

// startServe runs serve with the YAML config in front of a fresh demo
// server, with an admin listener (none for admin_listen: off) and a
// temporary data directory.
func startServe(t *testing.T, yaml string) *running {
	t.Helper()
	return startServeWith(t, yaml, nil)
}

// startServeWith is startServe with the demo server's handler wrapped by
// wrap (nil: unwrapped), e.g. to count what reaches the upstream.
func startServeWith(t *testing.T, yaml string, wrap func(http.Handler) http.Handler) *running {
	t.Helper()
	return startServeOn(t, nil, yaml, wrap)
}

// startServeOn is startServeWith on agents, a listener the test bound
// (nil: 127.0.0.1:0), for configs that must name its address.
func startServeOn(t *testing.T, agents net.Listener, yaml string, wrap func(http.Handler) http.Handler) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	if wrap != nil {
		h = wrap(h)
	}
	up := &http.Server{Handler: h}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
	cfg, err := parseConfig("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{dir: cfg.DataDir} // a data_dir in yaml is kept (a restart on the same directory)
	if r.dir == "" {
		r.dir = t.TempDir()
	}
	switch {
	case agents != nil:
		cfg.Listen, cfg.listener = agents.Addr().String(), agents
	case cfg.Listen == "":
		cfg.Listen = "127.0.0.1:0"
	}
	switch cfg.AdminListen {
	case "off": // a gateway no operator can reach
		cfg.AdminListen = ""
	default:
		cfg.AdminListen = "127.0.0.1:0"
	}
	cfg.DataDir = r.dir
	demoUp := gateway.Upstream{Name: "demo"}
	if len(cfg.Upstreams) == 1 && cfg.Upstreams[0].Name == "demo" { // keep what the config says of it (oauth, headers)
		demoUp = cfg.Upstreams[0]
	}
	demoUp.URL = "http://" + ln.Addr().String() + "/mcp"
	cfg.Upstreams = []gateway.Upstream{demoUp}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan bound, 1)
	served := make(chan error, 1)
	logger := serveLogger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	go func() { served <- serve(ctx, cfg, logger, func(at bound) { addrc <- at }) }()
	select {
	case at := <-addrc:
		scheme := "http://"
		if cfg.TLS != nil {
			scheme = "https://"
		}
		r.url, r.admin = scheme+at.Listen+"/mcp/demo", at.Admin
	case err := <-served:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	// The CLI's config names the admin address the gateway bound.
	r.config = filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(r.config, []byte("admin_listen: "+r.admin+"\ndata_dir: "+r.dir+"\n"), 0o600); err != nil {
		cancel()
		<-served
		t.Fatal(err)
	}
	var stopped bool
	var serveErr error
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serveErr = <-served
		}
		return serveErr
	}
	t.Cleanup(func() { r.stop() })
	return r
}

// mcpgoSession connects mcp-go's client to url (protocol 2025-11-25) and
// initializes as name; the client is closed when the test ends.
func mcpgoSession(t *testing.T, url, name string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	trans, err := mcptransport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: name, Version: "1"}}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, init
}

// session2025 opens a 2025-11-25 session at url as agent declaring caps
// (its capabilities object) and returns the headers its requests carry.
func session2025(t *testing.T, url, agent, caps string) map[string]string {
	t.Helper()
	hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	status, h, body := postWithHeaders(t, url, hdr, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"`+agent+`","version":"1"}}}`)
	if status != 200 || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	hdr["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
	postWithHeaders(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return hdr
}

// openPost posts body to url as an MCP client does (JSON, accepting JSON
// or an event stream) with the headers hdr, and returns the answer with
// its body unread: the stream of a held or streamed call.
func openPost(ctx context.Context, url string, hdr map[string]string, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// readUntil reads r until what it read holds s, and returns it; err is
// why r ended before.
func readUntil(r io.Reader, s string) (string, error) {
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), s) {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			return got.String(), err
		}
	}
	return got.String(), nil
}

// heldOn lists the approval requests on the admin API at admin (token
// t0k) and returns the first one's id and the listing; it fails the test
// when none is listed.
func heldOn(t *testing.T, ctx context.Context, admin string) (apr, listing string) {
	t.Helper()
	var out bytes.Buffer
	if err := runApprovals(ctx, []string{"list", "--admin", "http://" + admin, "--token", "t0k"}, &out); err != nil {
		t.Fatalf("approvals list on %s: %v", admin, err)
	}
	apr = regexp.MustCompile(`apr_[0-9a-f]+`).FindString(out.String())
	if apr == "" {
		t.Fatalf("approvals list on %s: %s, want the held call's request", admin, &out)
	}
	return apr, out.String()
}

// serveBenchAgent serves sluice bench's minimal A2A agent on 127.0.0.1:0
// until the test ends and returns its base URL.
func serveBenchAgent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent := &http.Server{Handler: bench.A2AAgent(base)}
	go agent.Serve(ln)
	t.Cleanup(func() { agent.Close() })
	return base
}

package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
)

// serveUpstreamURL runs serve in front of the demo server reached at the
// URL upURL(addr) builds, and returns the agents' URL and a stop func.
func serveUpstreamURL(t *testing.T, yaml string, upURL func(addr string) string) (string, string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
	cfg, err := parseConfig("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.AdminListen, cfg.DataDir = "127.0.0.1:0", "", t.TempDir()
	cfg.Upstreams = []gateway.Upstream{{Name: "demo", URL: upURL(ln.Addr().String())}}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan bound, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.DiscardHandler), func(at bound) { addrc <- at }) }()
	var url string
	select {
	case at := <-addrc:
		url = "http://" + at.Listen + "/mcp/demo"
	case err := <-served:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-served
	}
	t.Cleanup(func() { stop() })
	return url, cfg.DataDir, stop
}

// The operator's upstream URL, credentials in userinfo and query string
// included, is stored verbatim as target_endpoint of every
// policy_enforced event.
func TestTargetEndpointCredentialsInAudit(t *testing.T) {
	url, dir, stop := serveUpstreamURL(t, "policy: {default: allow}\n", func(addr string) string {
		return "http://svc:UPW-9f8e7d6c5b@" + addr + "/mcp?key=QKEY-1a2b3c4d5e6f&sig=SIG-0a9b8c7d6e"
	})
	out := modernCall(t, url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`)
	if !strings.HasPrefix(out, "200") {
		t.Logf("call: %.300s", out)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var exp bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(dir, audit.FileName)}, &exp); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"UPW-9f8e7d6c5b", "QKEY-1a2b3c4d5e6f", "SIG-0a9b8c7d6e"} {
		if strings.Contains(exp.String(), s) {
			i := strings.Index(exp.String(), s)
			t.Errorf("audit export holds the upstream credential %s: ...%s...", s, exp.String()[max(0, i-120):min(len(exp.String()), i+40)])
		}
	}
}

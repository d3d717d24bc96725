package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestApprovalFlow holds a call, approves it with `sluice approvals`, and
// checks the same call then goes through once.
func TestApprovalFlow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	go up.Serve(ln)
	defer up.Close()

	adminAddr := freeAddr(t)
	cfg, err := parseConfig("test", []byte("policy: {default: allow, result_mode: tool_result, require_approval: [add]}\nadmin_token: t0k\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", adminAddr
	cfg.Upstreams = []gateway.Upstream{{Name: "demo", URL: "http://" + ln.Addr().String() + "/mcp"}}
	cfg.DataDir = t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addrc := make(chan string, 1)
	go serve(ctx, cfg, slog.New(slog.DiscardHandler), func(a string) { addrc <- a })
	url := "http://" + <-addrc + "/mcp/demo"

	callAdd := func() string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent-1","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "add")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	held := callAdd()
	m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
	if m == nil || !strings.Contains(held, `"status":"approval_required"`) {
		t.Fatalf("first call: got %s, want approval_required with an approval_id", held)
	}
	id := m[1]
	var out bytes.Buffer
	admin := []string{"--admin", "http://" + adminAddr, "--token", "t0k"}
	if err := runApprovals(ctx, append([]string{"list"}, admin...), &out); err != nil || !strings.Contains(out.String(), id) {
		t.Fatalf("approvals list: %v\n%s", err, &out)
	}
	if err := runApprovals(ctx, []string{"approve", id, "--admin", "http://" + adminAddr}, &out); err == nil {
		t.Fatal("approve without the token succeeded")
	}
	if err := runApprovals(ctx, append([]string{"approve", id, "--by", "ops"}, admin...), &out); err != nil {
		t.Fatalf("approvals approve: %v", err)
	}
	if got := callAdd(); !strings.Contains(got, `"text":"5"`) {
		t.Fatalf("approved call: got %s, want the sum 5", got)
	}
	if got := callAdd(); !strings.Contains(got, "approval_required") {
		t.Fatalf("third call: got %s, want a new hold (an approval is used once)", got)
	}
}

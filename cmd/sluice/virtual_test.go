package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/audit"
)

// TestVirtualServerServe: virtual_servers: [{}] serves /mcp; a call there
// is decided and recorded as a call of the real upstream.
func TestVirtualServerServe(t *testing.T) {
	g := startServe(t, "upstreams: [{name: demo, url: http://127.0.0.1:1/mcp}]\nvirtual_servers: [{}]\nhide_denied_tools: false\npolicy: {default: allow, deny: [send_email], result_mode: tool_result}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := mcpgoSession(t, strings.TrimSuffix(g.url, "/demo"), "virtual-test")
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "a", "subject": "b", "body": "c"}}})
	if err != nil || !res.IsError {
		t.Fatalf("send_email through /mcp: %+v %v, want the soft deny", res, err)
	}
	c.Close()
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"type":"sluice.policy_enforced"[^\n]*"upstream":"demo"`).MatchString(out.String()) ||
		!regexp.MustCompile(`"type":"sluice.policy_enforced"[^\n]*"tool":"send_email"`).MatchString(out.String()) {
		t.Errorf("no policy_enforced event for demo's send_email:\n%.3000s", out.String())
	}
}

func TestVirtualServersConfig(t *testing.T) {
	base := "upstreams: [{name: a, url: http://127.0.0.1:1/mcp}, {name: b, url: http://127.0.0.1:1/mcp}]\n"
	for _, tc := range []struct{ yaml, want string }{
		{"virtual_servers: [{name: a}]", "an upstream has that name"},
		{"virtual_servers: [{upstreams: [a, c]}]", `no upstream named "c"`},
		{"virtual_servers: [{naming: sometimes}]", "naming"},
		{"virtual_servers: [{renames: {a/x: 'bad name'}}]", "names must match"},
		{"virtual_servers: [{name: v}, {name: v}]", "a second virtual server"},
		{"virtual_servers: [{nmae: v}]", "nmae"},
	} {
		_, err := parseConfig("test", []byte(base+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	c, err := parseConfig("test", []byte(base+"virtual_servers: [{}, {name: gh, upstreams: [b], naming: prefix, renames: {b/x: y}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.VirtualServers[0].Upstreams; len(got) != 2 || c.VirtualServers[0].Naming != "on_collision" {
		t.Errorf("defaults: %+v", c.VirtualServers[0])
	}
}

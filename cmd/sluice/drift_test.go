package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// modernCall makes one MCP 2026-07-28 request and returns the body.
func modernCall(t *testing.T, url, method, name, params string) string {
	t.Helper()
	return modernCallAs(t, url, "agent-1", method, name, params)
}

// modernCallAs is modernCall from a client named agent.
func modernCallAs(t *testing.T, url, agent, method, name, params string) string {
	t.Helper()
	return modernCallFrom(t, http.DefaultClient, url, agent, method, name, params)
}

// modernCallFrom is modernCallAs sent with c.
func modernCallFrom(t *testing.T, c *http.Client, url, agent, method, name, params string) string {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + agent + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestInventoryDriftBlocksUntilApproved: the demo server changes a tool's
// description behind the gateway's back; the changed tool is soft-denied
// with inventory_drift until an operator approves it.
func TestInventoryDriftBlocksUntilApproved(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\n")
	ctx, url, adminAddr := context.Background(), g.url, g.admin
	search := func() string {
		return modernCall(t, url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"sluice"}}`)
	}

	modernCall(t, url, "tools/list", "", "") // first sight: pinned
	if got := search(); strings.Contains(got, "inventory_drift") {
		t.Fatalf("before drift: got %s", got)
	}
	modernCall(t, url, "tools/call", "rotate_description", `{"name":"rotate_description","arguments":{}}`)
	modernCall(t, url, "tools/list", "", "") // sees the new description
	if got := search(); !strings.Contains(got, `"code":"inventory_drift"`) || !strings.Contains(got, `"isError":true`) {
		t.Fatalf("after drift: got %s, want a soft deny with inventory_drift", got)
	}
	var out bytes.Buffer
	admin := []string{"--admin", "http://" + adminAddr, "--config", g.config}
	if err := runInventory(ctx, append([]string{"diff", "demo"}, admin...), &out); err != nil || !strings.Contains(out.String(), "web_search") {
		t.Fatalf("inventory diff: %v\n%s", err, &out)
	}
	if err := runInventory(ctx, append([]string{"approve", "demo", "web_search"}, admin...), &out); err != nil {
		t.Fatalf("inventory approve: %v", err)
	}
	if got := search(); strings.Contains(got, "inventory_drift") || !strings.Contains(got, "sluice") {
		t.Fatalf("after approval: got %s, want search results", got)
	}
	// One upstream: no collisions, said as an empty list, not null.
	out.Reset()
	if err := runInventory(ctx, append([]string{"list"}, admin...), &out); err != nil {
		t.Fatalf("inventory list: %v", err)
	}
	var listed struct {
		Upstreams  map[string]string `json:"upstreams"`
		Collisions *[]any            `json:"collisions"`
	}
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || listed.Upstreams["demo"] == "" || listed.Collisions == nil || len(*listed.Collisions) != 0 {
		t.Errorf("inventory list: %v\n%s\nwant demo's hash and \"collisions\": []", err, &out)
	}
}

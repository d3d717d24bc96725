package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackDeletedSessionIDOnOtherReplica: two `sluice serve` replicas
// with one session key and agent_tasks in one real redis-server serve a
// virtual server. A user's mcp-go client opens a session through A and
// uses it through both (a load balancer without affinity), then ends it
// with a DELETE through A (logging out). An attacker holding the
// session id (a log, a proxy) sends it to B, to A, and to A restarted:
// each must answer 404, the session ended. Before, only A knew the id
// ended: B served the stolen id, its virtual session opening new inner
// sessions in place of the ended ones, and so did A after a restart.
func TestAttackDeletedSessionIDOnOtherReplica(t *testing.T) {
	srv := redistest.Start(t)
	cfg := "policy: {default: allow, result_mode: tool_result}\nvirtual_servers: [{}]\n" +
		"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"agent_tasks: {redis_url: \"" + srv.URL() + "\"}\n"
	a, b := startServe(t, cfg), startServe(t, cfg)
	urlA, urlB := strings.TrimSuffix(a.url, "/demo"), strings.TrimSuffix(b.url, "/demo")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, _ := mcpgoSession(t, urlA, "user")
	if _, err := user.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("tools/list through A: %v", err)
	}
	id := user.GetSessionId()
	if id == "" {
		t.Fatal("no session id")
	}
	hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": id}
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`
	// The session is served through B too: B has it in its table.
	if status, _, body := rawPost(t, urlB, hdr, call); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("the user's call through B: %d %s", status, body)
	}

	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, urlA, nil)
	for k, v := range hdr {
		del.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE through A: %d, want the session ended", resp.StatusCode)
	}

	for _, tc := range []struct{ name, url string }{{"B", urlB}, {"A", urlA}} {
		if status, _, body := rawPost(t, tc.url, hdr, call); status != http.StatusNotFound {
			t.Errorf("the ended session's id through %s: %d %s, want 404", tc.name, status, body)
		}
	}
	a.stop()
	a2 := startServe(t, cfg)
	if status, _, body := rawPost(t, strings.TrimSuffix(a2.url, "/demo"), hdr, call); status != http.StatusNotFound {
		t.Errorf("the ended session's id through A restarted: %d %s, want 404", status, body)
	}
}

// TestAttackDeletedSessionIDAfterRestart: one `sluice serve` with session
// keys and no Redis, so that its sessions outlive a restart. A client
// ends its session with DELETE; the gateway restarts on the same
// data_dir. The id, replayed, must be refused (404). Before, the ended
// id was remembered in memory only, and the restarted gateway served it.
func TestAttackDeletedSessionIDAfterRestart(t *testing.T) {
	cfg := "policy: {default: allow, result_mode: tool_result}\nvirtual_servers: [{}]\n" +
		"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"data_dir: " + t.TempDir() + "\n"
	a := startServe(t, cfg)
	url := strings.TrimSuffix(a.url, "/demo")
	hdr := session2025(t, url, "user", `{}`)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`
	if status, _, body := rawPost(t, url, hdr, call); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("the user's call: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	for k, v := range hdr {
		del.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d, want the session ended", resp.StatusCode)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	b := startServe(t, cfg)
	if status, _, body := rawPost(t, strings.TrimSuffix(b.url, "/demo"), hdr, call); status != http.StatusNotFound {
		t.Errorf("the ended session's id after a restart: %d %s, want 404", status, body)
	}
}

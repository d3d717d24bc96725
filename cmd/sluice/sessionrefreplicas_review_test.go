package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/telemetry"
)

// TestSessionScopeAcrossReplicasByRef (review138): a session is kept in
// route memory by its reference now, not its id. Two `sluice serve`
// replicas with one session key and route memory in one real
// redis-server: an mcp-go client's session (a route's and the virtual
// server's) reads a sensitive document through A, and its network sink
// through B is denied by the session-scoped rule, as through A; another
// session's sink is not.
func TestSessionScopeAcrossReplicasByRef(t *testing.T) {
	srv := redistest.Start(t)
	cfg := strings.Replace(evasionPolicy, "scope: agent", "scope: session", 1) + "virtual_servers: [{}]\n" +
		"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"agent_tasks: {redis_url: \"" + srv.URL() + "\"}\nroute_memory: {redis_url: \"" + srv.URL() + "\"}\n"
	a, b := startServe(t, cfg), startServe(t, cfg)
	for _, path := range []string{"/demo", ""} {
		t.Run("mcp"+path, func(t *testing.T) {
			urlA, urlB := strings.TrimSuffix(a.url, "/demo")+path, strings.TrimSuffix(b.url, "/demo")+path
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			user, _ := mcpgoSession(t, urlA, "user")
			other, _ := mcpgoSession(t, urlA, "other")
			call := func(c interface {
				CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
			}, name, args string) string {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = name, jsonArgs(t, args)
				res, err := c.CallTool(ctx, req)
				if err != nil {
					return err.Error()
				}
				var s strings.Builder
				for _, c := range res.Content {
					if tc, ok := c.(mcp.TextContent); ok {
						s.WriteString(tc.Text)
					}
				}
				return s.String()
			}
			if got := call(user, "read_document", readSalaries); !strings.Contains(got, "salary") {
				t.Fatalf("read_document through A: %s", got)
			}
			id := user.GetSessionId()
			hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": id}
			_, _, body := rawPost(t, urlB, hdr, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"web_search","arguments":`+search+`}}`)
			if !denied(body) {
				t.Errorf("the session's web_search through B after its read through A: %s, want a deny by no-exfil", body)
			}
			if got := call(user, "web_search", search); !denied(got) {
				t.Errorf("the session's web_search through A: %s, want a deny", got)
			}
			if got := call(other, "web_search", search); denied(got) {
				t.Errorf("another session's web_search: %s, want it allowed", got)
			}
			// Redis holds the session's reference, never its id (a
			// credential any replica serves).
			rc := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
			defer rc.Close()
			keys, err := rc.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			ref := false
			for _, k := range keys {
				ref = ref || strings.Contains(k, telemetry.SessionRef(id))
				v, _ := rc.Dump(ctx, k).Result()
				if strings.Contains(k, id) || strings.Contains(v, id) {
					t.Errorf("Redis key %q holds the session id", k)
				}
			}
			if !ref {
				t.Errorf("no Redis key names the session's reference: %q", keys)
			}
		})
	}
}

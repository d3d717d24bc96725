package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/auth"
)

const evasionPolicy = `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {read_document: ["source:sensitive"], web_search: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no network after a sensitive read}
`

// agentConn opens one MCP session or connection on a transport, as a
// client that names itself name, with key as its bearer token ("" for
// none), and returns a function making one tools/call that returns the
// result as text.
type agentConn func(t *testing.T, base, key, name string) func(tool, args string) string

func bearerHeaders(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

func mcpGoConn(open func(base string, h map[string]string) (*client.Client, error), version string) agentConn {
	return func(t *testing.T, base, key, name string) func(tool, args string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		c, err := open(base, bearerHeaders(key))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version,
			ClientInfo: mcp.Implementation{Name: name, Version: "1"}}}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		return func(tool, args string) string {
			var a map[string]any
			if err := json.Unmarshal([]byte(args), &a); err != nil {
				t.Fatal(err)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: a}})
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			return text(res)
		}
	}
}

var transports = map[string]agentConn{
	"mcp 2026-07-28 stateless": func(t *testing.T, base, key, name string) func(tool, args string) string {
		return func(tool, args string) string {
			return modernCallWithKey(t, base+"/mcp/demo", key, name, tool, args)
		}
	},
	"mcp 2025-06-18 session": mcpGoConn(func(base string, h map[string]string) (*client.Client, error) {
		return client.NewStreamableHttpClient(base+"/mcp/demo", mcptransport.WithHTTPHeaders(h))
	}, mcp.ProtocolVersion20250618),
	"sse": mcpGoConn(func(base string, h map[string]string) (*client.Client, error) {
		return client.NewSSEMCPClient(base+"/sse/demo", mcptransport.WithHeaders(h))
	}, mcp.ProtocolVersion20250618),
	"ws": wsConn("/ws/demo"),
}

// wsConn is the agentConn of a WebSocket connection to path (the
// route's, /ws/demo, or the virtual server's, /ws).
func wsConn(path string) agentConn {
	return func(t *testing.T, base, key, name string) func(tool, args string) string {
		h := http.Header{}
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		ws, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+path, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		id := 0
		rpc := func(method, params string) string {
			id++
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
			if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				_, b, err := ws.ReadMessage()
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				if strings.Contains(string(b), fmt.Sprintf(`"id":%d`, id)) {
					return string(b)
				}
			}
		}
		rpc("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}`)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
		return func(tool, args string) string {
			return rpc("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
		}
	}
}

// modernCallWithKey makes one 2026-07-28 tools/call from a client named
// name with key as its bearer token.
func modernCallWithKey(t *testing.T, url, key, name, tool, args string) string {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, meta)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

const (
	readSalaries = `{"path":"/hr/salaries.csv"}`
	search       = `{"query":"acme salaries"}`
)

func denied(got string) bool {
	return strings.Contains(got, "no-exfil") || strings.Contains(got, "no network after a sensitive read")
}

// The route-rule evasion of issue 10: an agent reads a sensitive
// document, then opens another session under another clientInfo.name and
// searches the web. Without auth the name is a claim, and every
// unauthenticated caller is one agent to route memory: the rename changes
// nothing (before, it walked out of the rule, keyed by the claimed name:
// TestAttackUnauthenticatedRenameEscapesMemory); with API keys the
// principal is the agent, the rename changes nothing either, on every
// transport and era. An agent cannot frame another by taking its name.
func TestRenameEvasion(t *testing.T) {
	keyFile, aliceKey, malloryKey := aliceAndMallory(t)
	now := time.Now()
	open := startServe(t, evasionPolicy)
	authed := startServe(t, evasionPolicy+"auth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	base := func(r *running) string { return strings.TrimSuffix(r.url, "/mcp/demo") }

	for name, conn := range transports {
		t.Run(name, func(t *testing.T) {
			// Each subtest uses agent names of its own: route memory is
			// shared by the gateway's sessions.
			suffix := strings.NewReplacer(" ", "-", ".", "").Replace(name)
			t.Run("without auth the rename is denied", func(t *testing.T) {
				conn(t, base(open), "", "alice-"+suffix)("read_document", readSalaries)
				if got := conn(t, base(open), "", "renamed-"+suffix)("web_search", search); !denied(got) {
					t.Errorf("web_search after renaming: got %s, want a deny by no-exfil", got)
				}
			})
			t.Run("with auth the rename is denied", func(t *testing.T) {
				k, _, err := auth.CreateKey(keyFile, "agent-"+suffix, 0, now)
				if err != nil {
					t.Fatal(err)
				}
				waitForKey(t, base(authed), k)
				if got := conn(t, base(authed), k, "alice")("read_document", readSalaries); denied(got) || !strings.Contains(got, "salary") {
					t.Fatalf("read_document: got %s", got)
				}
				if got := conn(t, base(authed), k, "someone-else")("web_search", search); !denied(got) {
					t.Errorf("web_search after renaming: got %s, want a deny by no-exfil", got)
				}
			})
		})
	}
	t.Run("framing", func(t *testing.T) {
		url := base(authed) + "/mcp/demo"
		modernCallWithKey(t, url, malloryKey, "alice", "read_document", readSalaries)
		if got := modernCallWithKey(t, url, aliceKey, "alice", "web_search", search); denied(got) {
			t.Errorf("alice's search after mallory read as \"alice\": got %s, want it allowed", got)
		}
		if got := modernCallWithKey(t, url, malloryKey, "bob", "web_search", search); !denied(got) {
			t.Errorf("mallory's search: got %s, want a deny by no-exfil", got)
		}
	})
}

// waitForKey polls until the running gateway has reread the key file
// and accepts key.
// liveKey issues agent an API key in keyFile and waits until the
// gateway at base takes it.
func liveKey(t *testing.T, keyFile, base, agent string) string {
	t.Helper()
	k, _, err := auth.CreateKey(keyFile, agent, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, base, k)
	return k
}

func waitForKey(t *testing.T, base, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := modernCallWithKey(t, base+"/mcp/demo", key, "probe", "echo", `{"message":"x"}`)
		if strings.HasPrefix(got, "200 ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not accept a new key: %s", got)
		}
	}
}

// auth: is validated at load with the key at fault; a listener beyond
// loopback needs an auth: section, mode none at least.
func TestAuthConfig(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"auth: {mode: jwt}\n", "auth.jwt.issuer"},
		{"auth: {mode: [jwt, none]}\n", "auth.mode"},
		{"auth: {mode: mtls}\n", "tls: {cert_file, key_file, client_ca_file}"},
		{"auth: {mode: jwt, jwt: {issuer: https://i, audience: [a], jwks_url: https://i/k, algorithms: [HS256]}}\n", "auth.jwt.algorithms[0]"},
		{"tls: {cert_file: x.pem}\n", "tls: set both cert_file and key_file"},
	} {
		if _, err := parseConfig("c.yaml", []byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error naming %s", tt.yaml, err, tt.want)
		}
	}
	log := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		listen, yaml string
		ok           bool
	}{
		{"127.0.0.1:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"0.0.0.0:8080", "auth: {mode: none}\n", true},
		{"0.0.0.0:8080", "auth: {mode: api_key}\n", true},
	} {
		cfg, err := parseConfig("c.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = tt.listen
		if err := checkIdentity(cfg, log); (err == nil) != tt.ok {
			t.Errorf("listen %s with %q: got %v, want ok=%v", tt.listen, tt.yaml, err, tt.ok)
		}
	}
}

func TestKeysCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	var out strings.Builder
	if err := runKeys(context.Background(), []string{"create", "--agent", "reporter", "--expires", "720h", "--file", file}, &out); err != nil {
		t.Fatal(err)
	}
	key, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(key, auth.KeyPrefix) {
		t.Fatalf("create printed %q, want a key", out.String())
	}
	keys, err := auth.ListKeys(file)
	if err != nil || len(keys) != 1 || strings.Contains(mustRead(t, file), key[len(auth.KeyPrefix)+13:]) {
		t.Fatalf("key file: %v %v; want one key, without its secret", keys, err)
	}
	out.Reset()
	if err := runKeys(context.Background(), []string{"revoke", keys[0].ID, "--file", file}, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runKeys(context.Background(), []string{"list", "--file", file}, &out); err != nil || !strings.Contains(out.String(), "revoked") {
		t.Fatalf("list: %v %q, want the key revoked", err, out.String())
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// aliceAndMallory creates an API key file with keys for agents alice and
// mallory.
func aliceAndMallory(t *testing.T) (keyFile, alice, mallory string) {
	t.Helper()
	keyFile = filepath.Join(t.TempDir(), "agent_keys.json")
	var err error
	if alice, _, err = auth.CreateKey(keyFile, "alice", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if mallory, _, err = auth.CreateKey(keyFile, "mallory", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	return keyFile, alice, mallory
}

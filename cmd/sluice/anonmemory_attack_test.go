package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKCall opens the official Go SDK client named name on url, in era
// ("2026-07-28": requests outside any session, the client's name in each
// one's _meta; "2025-11-25": a session it initializes), with key as its
// bearer token ("" for none), and returns a function making one
// tools/call and returning its text (or error).
func goSDKCall(t *testing.T, url, era, key, name string) func(tool, args string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	hc := http.DefaultClient
	if key != "" {
		hc = &http.Client{Transport: bearer{key, http.DefaultTransport}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("%s as %q: connect: %v", era, name, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("%s as %q: the client speaks %s", era, name, got)
	}
	return func(tool, args string) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: jsonArgs(t, args)})
		if err != nil {
			return err.Error()
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
}

// TestAttackUnauthenticatedRenameEscapesMemory: without authentication an
// agent's name is a claim, made again with each 2026-07-28 request. An
// agent reads a sensitive document under one name, then calls the network
// sink under another: in the next 2026-07-28 request, or by switching era
// (a 2025 session read, a 2026-07-28 sink, and back), or by opening
// another session under another name. Before, route memory was kept per
// claimed name, so every one of these walked out of the agent-scoped
// rule, and a 2026-07-28 rename out of a session-scoped one too (requests
// outside a session share the memory of their name's "" session). Now
// every unauthenticated caller is one subject to route memory: the sink
// is denied whatever name and era it comes under (the official Go SDK
// client, `sluice serve` on 127.0.0.1:0).
func TestAttackUnauthenticatedRenameEscapesMemory(t *testing.T) {
	const (
		modern = "2026-07-28"
		legacy = "2025-11-25"
	)
	for _, scope := range []string{"agent", "session"} {
		for _, c := range []struct{ read, sink string }{
			{modern, modern},
			{legacy, modern},
			{modern, legacy},
			{legacy, legacy},
		} {
			if scope == "session" && (c.read == legacy || c.sink == legacy) {
				// A session's memory is that session's: a sink in another
				// session (or outside any) is not the rule's business.
				continue
			}
			t.Run(fmt.Sprintf("%s scope/read %s/sink %s", scope, c.read, c.sink), func(t *testing.T) {
				open := startServe(t, strings.Replace(evasionPolicy, "scope: agent", "scope: "+scope, 1))
				sink := goSDKCall(t, open.url, c.sink, "", "renamed")
				if got := sink("web_search", search); denied(got) || !strings.Contains(got, "Top results") {
					t.Fatalf("web_search before any read: got %s, want the search result", got)
				}
				if got := goSDKCall(t, open.url, c.read, "", "reader")("read_document", readSalaries); !strings.Contains(got, "salary") {
					t.Fatalf("read_document: got %s", got)
				}
				if got := sink("web_search", search); !denied(got) {
					t.Errorf("web_search under another name after the read: got %s, want a deny by no-exfil", got)
				}
			})
		}
	}
}

// Start-up says, without authentication, that route memory takes every
// unauthenticated caller for one agent; with it, nothing of the kind.
func TestStartupSaysUnauthenticatedMemory(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want bool
	}{{"", true}, {"auth: {mode: none}\n", true}, {"auth: {mode: api_key}\n", false}} {
		cfg, err := parseConfig("c.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = "127.0.0.1:0"
		var b strings.Builder
		if err := checkIdentity(cfg, slog.New(slog.NewTextHandler(&b, nil))); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `route_memory="one agent for every unauthenticated caller`); got != tt.want {
			t.Errorf("%q: start-up logged %q; saying route memory has one unauthenticated agent: got %v, want %v", tt.yaml, b.String(), got, tt.want)
		}
	}
}

// An authenticated agent's memory is its principal's on every path: a
// read made through any transport, era or the virtual server denies the
// sink its key then calls as a 2026-07-28 request, and not another
// agent's. (A path whose calls lost their principal would put the read in
// the unauthenticated agent's memory, and the sink would pass.)
func TestAuthenticatedMemoryOnEveryPath(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "agent_keys.json")
	authed := startServe(t, evasionPolicy+"virtual_servers: [{}]\nauth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	base := strings.TrimSuffix(authed.url, "/mcp/demo")
	key := func(agent string) string { return liveKey(t, keyFile, base, agent) }
	reads := authedPaths(base)
	n := 0
	for name, read := range reads {
		n++
		agent := fmt.Sprintf("agent-%d", n)
		t.Run(name, func(t *testing.T) {
			k := key(agent)
			if got := read(t, k, "client")("read_document", readSalaries); !strings.Contains(got, "salary") {
				t.Fatalf("read_document: got %s", got)
			}
			if got := modernCallWithKey(t, authed.url, k, "client", "web_search", search); !denied(got) {
				t.Errorf("%s's web_search after its read: got %s, want a deny by no-exfil", agent, got)
			}
			if got := modernCallWithKey(t, authed.url, key("other-"+agent), "client", "web_search", search); denied(got) {
				t.Errorf("another agent's web_search: got %s, want it allowed", got)
			}
		})
	}
}

// TestAgentHeaderNamesShareMemory: names an agent_header gives are claims
// too, and every caller they name is the one unauthenticated agent to
// route memory (README, Identity), across protocols: a sensitive answer
// got by an A2A message under one header value denies the MCP network
// sink under another, and a tools/call read does as much for an A2A
// sink.
func TestAgentHeaderNamesShareMemory(t *testing.T) {
	base := serveBenchAgent(t)
	r := startServe(t, `agent_header: X-Agent
policy:
  default: allow
  result_mode: tool_result
  tool_classes: {"a2a:reader/send": ["source:sensitive"], read_document: ["source:sensitive"], web_search: ["sink:network"], "a2a:mailer/send": ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no network after a sensitive read}
agents: [{name: reader, url: `+base+`}, {name: mailer, url: `+base+`}]
`)
	root := strings.TrimSuffix(r.url, "/mcp/demo")
	send := func(to, who string) string {
		return a2aPost(t, root+"/a2a/"+to, who, `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
	}
	call := func(who, tool, args string) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, tool, args)
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "X-Agent": who} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := call("bob", "web_search", search); denied(got) {
		t.Fatalf("web_search before any read: got %s, want it allowed", got)
	}
	if got := send("mailer", "bob"); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("A2A sink before any read: got %s, want it sent", got)
	}
	if got := send("reader", "alice"); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("A2A read as alice: got %s, want it sent", got)
	}
	if got := call("bob", "web_search", search); !denied(got) {
		t.Errorf("bob's web_search after alice's A2A read: got %s, want a deny by no-exfil", got)
	}
	if got := send("mailer", "carol"); !strings.Contains(got, "no-exfil") {
		t.Errorf("carol's A2A sink after alice's A2A read: got %s, want a deny by no-exfil", got)
	}
}

// TestAuthenticatedMemoryA2A: an A2A message (JSON-RPC binding; the demo
// agent offers no HTTP+JSON one) is in its principal's route memory, as a tools/call is:
// its sensitive answer denies the principal's MCP network sink, not
// another principal's. (Had the A2A routes lost the principal, the read
// would be in the unauthenticated agent's memory, and the sink would
// pass.)
func TestAuthenticatedMemoryA2A(t *testing.T) {
	agentURL := serveBenchAgent(t)
	keyFile := filepath.Join(t.TempDir(), "agent_keys.json")
	g := startServe(t, `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {"a2a:reader/send": ["source:sensitive"], web_search: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no network after a sensitive read}
agents: [{name: reader, url: `+agentURL+`}]
auth: {mode: api_key, api_keys: {file: `+keyFile+`}}
`)
	base := strings.TrimSuffix(g.url, "/mcp/demo")
	key := func(agent string) string { return liveKey(t, keyFile, base, agent) }
	post := func(path, key, body string) string {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	send := func(key string) string {
		return post("/a2a/reader", key, `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
	}
	reader, other := key("reader"), key("other")
	if got := send(reader); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("A2A message: got %s, want it sent", got)
	}
	if got := modernCallWithKey(t, g.url, reader, "client", "web_search", search); !denied(got) {
		t.Errorf("the reader's web_search after its A2A read: got %s, want a deny by no-exfil", got)
	}
	if got := modernCallWithKey(t, g.url, other, "client", "web_search", search); denied(got) {
		t.Errorf("another agent's web_search: got %s, want it allowed", got)
	}
}

// Start-up says, without authentication, which rate limits by principal
// are one bucket for every caller (231eacc made them so): a config
// written for agents naming themselves (agent_header) and limited by
// principal turned silently from a bucket per agent into one for all,
// so that one busy agent's calls were every agent's limit. With
// authentication, nothing of the kind.
func TestStartupSaysPrincipalRateLimitOneBucket(t *testing.T) {
	const limits = "rate_limits:\n  rules:\n    - {id: per-agent, by: [principal], rate: 60/m}\n    - {id: per-address, by: [client], rate: 60/m}\n"
	for _, tt := range []struct {
		yaml string
		want bool
	}{{limits, true}, {"auth: {mode: none}\n" + limits, true}, {"auth: {mode: api_key}\n" + limits, false}, {"", false}} {
		cfg, err := parseConfig("c.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = "127.0.0.1:0"
		var b strings.Builder
		if err := checkIdentity(cfg, slog.New(slog.NewTextHandler(&b, nil))); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), `rate_limits_by_principal="one bucket for every unauthenticated caller`) && strings.Contains(b.String(), "per-agent")
		if got != tt.want || strings.Contains(b.String(), "per-address") {
			t.Errorf("%q: start-up logged %q; naming per-agent (alone) as one bucket for all: got %v, want %v", tt.yaml, b.String(), got, tt.want)
		}
	}
}

// authedPaths are the ways a client with an API key calls sluice serve at
// base: every transport and era of the route (transports), and the
// virtual server's /mcp in both eras, /sse and /ws. Each opens a
// connection for key under a client name and returns its caller.
func authedPaths(base string) map[string]func(t *testing.T, key, name string) func(tool, args string) string {
	reads := map[string]func(t *testing.T, key, name string) func(tool, args string) string{
		"virtual server 2026-07-28": func(t *testing.T, key, name string) func(tool, args string) string {
			return goSDKCall(t, base+"/mcp", "2026-07-28", key, name)
		},
		"virtual server 2025-11-25": func(t *testing.T, key, name string) func(tool, args string) string {
			return goSDKCall(t, base+"/mcp", "2025-11-25", key, name)
		},
		"virtual server sse": func(t *testing.T, key, name string) func(tool, args string) string {
			return mcpGoConn(func(base string, h map[string]string) (*client.Client, error) {
				return client.NewSSEMCPClient(base+"/sse", mcptransport.WithHeaders(h))
			}, "2025-06-18")(t, base, key, name)
		},
		"virtual server ws": func(t *testing.T, key, name string) func(tool, args string) string {
			return wsConn("/ws")(t, base, key, name)
		},
	}
	for name, conn := range transports {
		reads[name] = func(t *testing.T, key, client string) func(tool, args string) string {
			return conn(t, base, key, client)
		}
	}
	return reads
}

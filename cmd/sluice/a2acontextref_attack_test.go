package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackA2AContextNamedAsSessionRef (review138): an MCP session is
// recorded, and its route memory kept, by its reference (sha256: and 24
// hex digits), which events, spans, logs and approval records show; an
// A2A conversation is decided with its contextId, which the agent names,
// as its session. An agent that named a conversation after an MCP
// session's reference shared that session's route memory: a sensitive
// answer in the conversation (its first turn, linked to the context the
// agent answered) closed the network sink in the MCP session of another
// client, which had read nothing. Now a contextId of a reference's form
// is kept apart from the MCP session's.
func TestAttackA2AContextNamedAsSessionRef(t *testing.T) {
	var ref atomic.Value // the MCP session's reference, the agent's contextId
	ref.Store("c1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"name":"stub","url":"`+base+`/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3","skills":[{"id":"lookup","description":"Look a record up."},{"id":"publish","description":"Publish a text."}]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"`+ref.Load().(string)+`","status":{"state":"completed"}}}`)
	})}
	go agent.Serve(ln)
	t.Cleanup(func() { agent.Close() })
	g := startServe(t, `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {"a2a:stub/lookup": ["source:sensitive"], "a2a:stub/publish": ["sink:network"], web_search: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: session, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no network after a sensitive read}
agents: [{name: stub, url: `+base+`}]
`)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "victim", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.ID() == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	ref.Store(telemetry.SessionRef(cs.ID()))
	sink := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "web_search", Arguments: jsonArgs(t, search)})
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

	root := strings.TrimSuffix(g.url, "/mcp/demo")
	send := func(skill, context string) string {
		if context != "" {
			context = `,"contextId":"` + context + `"`
		}
		req, _ := http.NewRequest(http.MethodPost, root+"/a2a/stub", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries"}],"metadata":{"skillId":"`+skill+`"}`+context+`}}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if body := send("lookup", ""); !strings.Contains(body, ref.Load().(string)) {
		t.Fatalf("A2A lookup: %s; want the agent's answer naming its context", body)
	}
	if got := sink(); denied(got) || !strings.Contains(got, "Top results") {
		t.Errorf("web_search in an MCP session that read nothing, after an A2A conversation named after its reference read a record: got %s, want the search result", got)
	}
	// The conversation keeps its own memory: its sink is closed.
	if got := send("publish", ref.Load().(string)); !strings.Contains(got, "no-exfil") {
		t.Errorf("publish in the conversation that read a record: got %s, want a deny by no-exfil", got)
	}
}

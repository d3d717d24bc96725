package gateway

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// regexpAskID finds the id of a request relayed to the client.
var regexpAskID = regexp.MustCompile(`"id":("sluice-ask-[^"]+")`)

// relatedTaskID is the related task mcp-go read in m, a _meta.
func relatedTaskID(m *mcp.Meta) string {
	if m == nil {
		return "none"
	}
	rel, _ := m.AdditionalFields[relatedTaskMeta].(map[string]any)
	id, _ := rel["taskId"].(string)
	return id
}

// relatedUpstream is taskUpstream with two more tools: echo_related,
// which says which related task its call named, and ask, which asks the
// client something and says which related task the answer named.
func relatedUpstream(t *testing.T, name string, calls *atomic.Int32) string {
	t.Helper()
	s, u := taskUpstream(t, name, nil, server.WithElicitation())
	s.AddTool(mcp.NewTool("echo_related"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		return mcp.NewToolResultText(name + " saw related " + relatedTaskID(req.Params.Meta)), nil
	})
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "go on?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(name + " answer related " + relatedTaskID(res.Meta)), nil
	})
	return u
}

// TestVirtualRelatedTaskIn: a client's related-task _meta names a task by
// the id the virtual server showed it; the upstream gets its own id, in
// a request and in an answer to its elicitation. One naming another
// client's task, another upstream's task than the one the message goes
// to, an upstream the virtual server does not have, or an upstream's bare
// id is refused with a JSON-RPC error and reaches no upstream.
func TestVirtualRelatedTaskIn(t *testing.T) {
	var calls atomic.Int32
	one, two := relatedUpstream(t, "one", &calls), relatedUpstream(t, "two", &calls)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: one}, Upstream{Name: "two", URL: two})
	alice, _ := vopen(t, u, "alice")
	bob, _ := vopen(t, u, "bob")
	t1, t2 := vtask(t, u, alice, "read_secret", "alice"), vtask(t, u, alice, "two_read_secret", "alice")
	raw1, raw2 := strings.TrimPrefix(t1, "one/"), strings.TrimPrefix(t2, "two/")
	meta := func(id string) string { return `"_meta":{"` + relatedTaskMeta + `":{"taskId":"` + id + `"}}` }
	call := func(h map[string]string, tool, id string) string {
		_, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+meta(id)+`}}`)
		return body
	}

	for _, c := range []struct{ tool, id, want string }{{"echo_related", t1, "one saw related " + raw1}, {"two_echo_related", t2, "two saw related " + raw2}} {
		if got := call(alice, c.tool, c.id); !strings.Contains(got, c.want) {
			t.Errorf("alice's %s related to %s: %s, want %q", c.tool, c.id, got, c.want)
		}
	}
	before := calls.Load()
	for _, c := range []struct {
		who       map[string]string
		tool, id  string
		wantError string
	}{
		{alice, "two_echo_related", t1, "is a task of upstream"},
		{bob, "echo_related", t1, "not found"},
		{bob, "two_echo_related", t2, "not found"},
		{alice, "echo_related", "three/" + raw1, "not found"},
		{alice, "echo_related", raw1, "not found"},
		{alice, "echo_related", "two/" + raw1, "not found"},
	} {
		got := call(c.who, c.tool, c.id)
		if !strings.Contains(got, `"error"`) || !strings.Contains(got, c.wantError) || strings.Contains(got, "saw related") {
			t.Errorf("%s's %s related to %s: %s, want an error %q", c.who["X-Test-Principal"], c.tool, c.id, got, c.wantError)
		}
	}
	if n := calls.Load(); n != before {
		t.Errorf("%d refused calls reached an upstream", n-before)
	}
	// 2026-07-28: the client's _meta goes into every inner request.
	modern := func(who, tool, id string) string {
		h := modernHeaders("tools/call", tool)
		h["X-Test-Principal"] = who
		_, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"`+who+`","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"`+relatedTaskMeta+`":{"taskId":"`+id+`"}}}}`)
		return body
	}
	if got := modern("alice", "two_echo_related", t2); !strings.Contains(got, "two saw related "+raw2) {
		t.Errorf("alice's 2026-07-28 call related to %s: %s", t2, got)
	}
	if got := modern("bob", "two_echo_related", t2); !strings.Contains(got, "not found") || strings.Contains(got, "saw related") {
		t.Errorf("bob's 2026-07-28 call related to alice's %s: %s", t2, got)
	}
	// A list goes to every upstream: each gets its own id, or none.
	if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{`+meta(t1)+`}}`); !strings.Contains(got, "two_echo_related") {
		t.Errorf("tools/list related to %s: %s", t1, got)
	}

	// An answer to one's elicitation, on the GET stream of a client that
	// takes JSON answers.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rd := openGetStream(ctx, t, u, alice)
	jsonOnly := map[string]string{"Accept": "application/json"}
	for k, v := range alice {
		jsonOnly[k] = v
	}
	done := make(chan string, 1)
	go func() {
		_, _, body := post(t, u, jsonOnly, `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
		done <- body
	}()
	var askID string
	for askID == "" {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("GET stream ended before the elicitation: %v", err)
		}
		if m := regexpAskID.FindStringSubmatch(string(ev.Data)); m != nil && strings.Contains(string(ev.Data), "elicitation/create") {
			askID = m[1]
		}
	}
	answer := func(h map[string]string, id string) (int, string) {
		code, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":`+askID+`,"result":{"action":"accept","content":{"ok":true},`+meta(id)+`}}`)
		return code, body
	}
	for _, id := range []string{t2, "three/" + raw1, raw1} {
		if code, got := answer(alice, id); code != http.StatusBadRequest || !strings.Contains(got, `"error"`) {
			t.Errorf("alice's answer related to %s: %d %s, want 400 and an error", id, code, got)
		}
	}
	// Bob's task on one, named in alice's answer.
	b1 := vtask(t, u, bob, "read_secret", "bob")
	if code, got := answer(alice, b1); code != http.StatusBadRequest || !strings.Contains(got, "not found") {
		t.Errorf("alice's answer related to bob's %s: %d %s", b1, code, got)
	}
	if code, got := answer(alice, t1); code >= 300 {
		t.Fatalf("alice's answer related to %s: %d %s", t1, code, got)
	}
	select {
	case got := <-done:
		if !strings.Contains(got, "one answer related "+raw1) {
			t.Errorf("ask: %s, want one to read %s", got, raw1)
		}
	case <-ctx.Done():
		t.Fatal("ask never finished")
	}
}

// TestVirtualTasksExtension2026: an upstream declaring MCP 2026-07-28's
// tasks extension (capabilities.extensions) makes the virtual server
// declare it too, to mcp-go's 2026-07-28 client (server/discover) and in
// an initialize answer; one whose upstreams do not declare it does not
// (TestVirtualTasksNotDeclared).
func TestVirtualTasksExtension2026(t *testing.T) {
	ext := server.WithExtensions(map[string]any{tasksExtension: map[string]any{}})
	_, one := taskUpstream(t, "one", nil, ext)
	_, two := taskUpstream(t, "two", nil)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: one}, Upstream{Name: "two", URL: two})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	trans, err := mcptransport.NewStreamableHTTP(u, mcptransport.WithHTTPHeaders(map[string]string{"X-Test-Principal": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgoclient.NewClient(trans)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "modern-agent"}}})
	if err != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	if _, ok := res.Capabilities.Extensions[tasksExtension]; !ok {
		t.Errorf("server/discover declares extensions %v, want %s", res.Capabilities.Extensions, tasksExtension)
	}
	_, init := vopen(t, u, "alice")
	if !strings.Contains(init, `"extensions":{"`+tasksExtension+`":{}}`) {
		t.Errorf("initialize: %s, want the tasks extension", init)
	}
}

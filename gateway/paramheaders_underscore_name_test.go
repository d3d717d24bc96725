package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestParamHeaderNameWithUnderscore (review): an x-mcp-header name may hold
// an underscore (it is an RFC 9110 token, as SDKs check it), and a client
// mirrors such an argument into Mcp-Param-Tenant_Id as SEP-2243 asks. The
// refusal of underscored twins (TestAttackHeaderUnderscoreTwin) refused
// every such call, however right its header. What it guards against is
// still refused: beside the declared Mcp-Param-Tenant_Id, a hyphenated
// Mcp-Param-Tenant-Id is the same header to a CGI-style reader in front of
// the gateway, a second value that nothing checked.
func TestParamHeaderNameWithUnderscore(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"tenant": map[string]any{"type": "string", "x-mcp-header": "Tenant_Id"},
	}, "required": []string{"tenant"}}
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks a tenant up", InputSchema: schema},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked up " + in["tenant"].(string)}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(up.Close)
	p, err := policy.Compile([]byte("default: allow\nresult_mode: tool_result\n"), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "crm", URL: up.URL}}, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	// The go-sdk client mirrors the argument into Mcp-Param-Tenant_Id.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"/mcp/crm", "/mcp"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + path}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatalf("%s: connect: %v", path, err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("%s: go-sdk tools/list: %v", path, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"tenant": "acme"}})
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "looked up acme" {
			t.Errorf("%s: go-sdk client's call: %+v, %v; want it served", path, res, err)
		}
		cs.Close()
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, path := range []string{"/mcp/crm", "/mcp"} {
		if status, _, body := post(t, gw.URL+path, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`); status != 200 || !strings.Contains(body, "lookup") {
			t.Fatalf("%s: tools/list: %d %s", path, status, body)
		}
		call := func(id int, extra map[string]string) string {
			t.Helper()
			hdr := modernHeaders("tools/call", "lookup")
			for k, v := range extra {
				hdr[k] = v
			}
			_, _, body := post(t, gw.URL+path, hdr, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"lookup","arguments":{"tenant":"acme"},`+meta+`}}`)
			return body
		}
		if body := call(2, map[string]string{"Mcp-Param-Tenant_Id": "acme"}); !strings.Contains(body, "looked up acme") {
			t.Errorf("%s: a call with its declared Mcp-Param-Tenant_Id: %.300s, want it served", path, body)
		}
		if body := call(3, map[string]string{"Mcp-Param-Tenant_Id": "evil"}); !strings.Contains(body, "-32020") {
			t.Errorf("%s: Mcp-Param-Tenant_Id disagreeing with the arguments: %.300s, want the header mismatch (-32020)", path, body)
		}
		for i, twin := range []map[string]string{
			{"Mcp-Param-Tenant_Id": "acme", "Mcp-Param-Tenant-Id": "evil"},
			{"Mcp-Param-Tenant_Id": "acme", "mcp_param_tenant_id": "evil"},
		} {
			if body := call(10+i, twin); !strings.Contains(body, "-32020") {
				t.Errorf("%s: %v: %.300s, want the header mismatch (-32020)", path, twin, body)
			}
		}
	}
}

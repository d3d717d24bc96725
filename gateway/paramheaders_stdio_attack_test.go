package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
)

// regionServer is regionBackend's server: its transfer tool marks region
// (and note.tag) with x-mcp-header, and answers "executed in NAME".
func regionServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		"amount": map[string]any{"type": "integer"},
		"note":   map[string]any{"type": "object", "properties": map[string]any{"tag": map[string]any{"type": "string", "x-mcp-header": "Tag"}}},
	}, "required": []string{"region", "amount"}}
	mcp.AddTool(srv, &mcp.Tool{Name: "transfer", Description: "Moves money within a region", InputSchema: schema},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "executed in " + name}}}, nil, nil
		})
	return srv
}

// TestHelperRegionStdio is regionServer on stdio when
// SLUICE_TEST_REGION_STDIO is 1; on its own it does nothing.
func TestHelperRegionStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_REGION_STDIO") != "1" {
		return
	}
	_ = regionServer("stdio").Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// TestAttackParamHeaderStdioUnchecked (attacker review): the client's
// Mcp-Param-* headers (SEP-2243) were checked against the arguments only
// for a 2026-07-28 tools/call to an HTTP upstream, whose server would
// check them too. Behind a stdio route the gateway is the only HTTP
// server the client and whatever routes, rate-limits or filters on those
// headers in front of it talk to, and nothing checked them: a call policy
// allowed for region "us" went through with Mcp-Param-Region: eu, which
// the router in front had acted on. They are checked on every route and
// through the virtual server, whatever the upstream's transport.
func TestAttackParamHeaderStdioUnchecked(t *testing.T) {
	g, err := New(Options{
		Upstreams: []Upstream{{Name: "bank", Command: os.Args[0], Args: []string{"-test.run=^TestHelperRegionStdio$"},
			Env: map[string]string{"SLUICE_TEST_REGION_STDIO": "1"}}},
		VirtualServers: []VirtualServer{{}},
	}, &intercept.Interceptor{Decider: usOnlyPolicy(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if status, _, body := post(t, gw.URL+"/mcp/bank", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`); status != 200 || !strings.Contains(body, "x-mcp-header") {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	call := func(path string, id int, params map[string]string) string {
		t.Helper()
		hdr := modernHeaders("tools/call", "transfer")
		for k, v := range params {
			hdr[k] = v
		}
		_, _, body := post(t, gw.URL+path, hdr, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"transfer","arguments":{"region":"us","amount":5},`+meta+`}}`)
		return body
	}
	for _, path := range []string{"/mcp/bank", "/mcp"} {
		if body := call(path, 2, map[string]string{"Mcp-Param-Region": "us"}); !strings.Contains(body, "executed in stdio") {
			t.Fatalf("%s: a legitimate US transfer: %s", path, body)
		}
		for i, h := range []map[string]string{
			{"Mcp-Param-Region": "eu"},
			{"Mcp-Param-Region": "=?base64?ZXU=?="},
			{}, // none, though the arguments hold the region
		} {
			if body := call(path, 10+i, h); !strings.Contains(body, "-32020") {
				t.Errorf("%s: a US transfer with %v: %.200s, want the header mismatch (-32020)", path, h, body)
			}
		}
	}
}

// TestAttackParamHeaderUnlistedTool (attacker review): the Mcp-Param-*
// headers of a call are read from the tool's inputSchema as the gateway
// last saw it listed, and a tool not listed yet was not checked. With an
// inventory, the gateway lists an upstream's tools itself before the call
// of a client that has not (intercept's ensureListed), but only when
// deciding, after the headers were let through: the first call after a
// start (or on a fresh replica) of a client that cached its list went on
// with Mcp-Param-Region: eu beside a body policy allowed for "us". The
// listing is made before the headers are checked.
func TestAttackParamHeaderUnlistedTool(t *testing.T) {
	var executed sync.Map
	up := regionBackend(t, "http", &executed)
	for _, route := range []string{"http", "stdio"} {
		t.Run(route, func(t *testing.T) {
			inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			ic := &intercept.Interceptor{Decider: &govern.DriftGate{Next: usOnlyPolicy(t), Inventory: inv}, Observer: inv}
			g, err := New(Options{Upstreams: []Upstream{
				{Name: "http", URL: up.URL},
				{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperRegionStdio$"}, Env: map[string]string{"SLUICE_TEST_REGION_STDIO": "1"}},
			}}, ic, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"cached","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
			hdr := modernHeaders("tools/call", "transfer")
			hdr["Mcp-Param-Region"] = "eu"
			_, _, body := post(t, gw.URL+"/mcp/"+route, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transfer","arguments":{"region":"us","amount":5},`+meta+`}}`)
			if !strings.Contains(body, "-32020") || strings.Contains(body, "executed") {
				t.Errorf("a first call, never listed, with Mcp-Param-Region: eu beside region \"us\": %.300s, want the header mismatch (-32020)", body)
			}
			hdr["Mcp-Param-Region"] = "us"
			if _, _, body := post(t, gw.URL+"/mcp/"+route, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transfer","arguments":{"region":"us","amount":5},`+meta+`}}`); !strings.Contains(body, "executed in "+route) {
				t.Errorf("the same call with its header right: %.300s", body)
			}
		})
	}
}

// TestAttackHeaderUnderscoreTwin (attacker review): a header must appear
// once, since what routes in front of the gateway may read another value
// than the one checked; but Mcp_Param_Region (or Mcp_Method, Mcp_Name)
// beside Mcp-Param-Region counted as another header, though CGI, WSGI and
// nginx's $http_ variables (with underscores_in_headers) read both as one
// and may take either. The check let a call through whose Mcp-Param-Region
// said "us", as its body, while its Mcp_Param_Region said "eu" (and one
// whose Mcp_Method said tools/list); such a twin counts as the header
// appearing twice, on a route and through the virtual server.
func TestAttackHeaderUnderscoreTwin(t *testing.T) {
	var executed sync.Map
	up := regionBackend(t, "us", &executed)
	g, err := New(Options{Upstreams: []Upstream{{Name: "bank", URL: up.URL}}, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: usOnlyPolicy(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if status, _, body := post(t, gw.URL+"/mcp/bank", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`); status != 200 || !strings.Contains(body, "transfer") {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	for _, path := range []string{"/mcp/bank", "/mcp"} {
		call := func(id int, extra map[string]string) string {
			t.Helper()
			hdr := modernHeaders("tools/call", "transfer")
			hdr["Mcp-Param-Region"] = "us"
			for k, v := range extra {
				hdr[k] = v
			}
			_, _, body := post(t, gw.URL+path, hdr, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"transfer","arguments":{"region":"us","amount":5},`+meta+`}}`)
			return body
		}
		if body := call(2, nil); !strings.Contains(body, "executed in us") {
			t.Fatalf("%s: a legitimate transfer: %s", path, body)
		}
		for i, h := range []map[string]string{
			{"Mcp_Param_Region": "eu"},
			{"mcp_param_region": "eu"},
			{"Mcp_Method": "tools/list"},
			{"Mcp_Name": "other"},
			{"Mcp_Protocol_Version": "2025-11-25"},
		} {
			if body := call(10+i, h); !strings.Contains(body, "-32020") {
				t.Errorf("%s: a transfer with %v beside its checked headers: %.200s, want the header mismatch (-32020)", path, h, body)
			}
		}
	}
}

// TestParamHeaderListingFailsOnce: the listing classify makes for a call
// of a tool not listed yet (TestAttackParamHeaderUnlistedTool) is the one
// the call is decided with: when it fails, the call is denied with
// tools_not_listed, and the upstream is not listed a second time (a hung
// one would hold the call twice the listing's bound).
func TestParamHeaderListingFailsOnce(t *testing.T) {
	var lists atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"initialize"`) || strings.Contains(string(body), `"tools/list"`) {
			lists.Add(1) // a listing's first request: the gateway's initialize, or its 2026-07-28 tools/list
		}
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(up.Close)
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &govern.DriftGate{Next: &intercept.StaticDecider{Default: intercept.Allow}, Inventory: inv}, Observer: inv}
	g, err := New(Options{Upstreams: []Upstream{{Name: "down", URL: up.URL}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	body := statelessAs(t, gw.URL+"/mcp/down", "fresh", "tools/call", "transfer", `{"name":"transfer","arguments":{"region":"us"}}`)
	if !strings.Contains(body, intercept.ReasonToolsNotListed) {
		t.Errorf("a call whose upstream could not be listed: %.300s, want it denied with %s", body, intercept.ReasonToolsNotListed)
	}
	if n := lists.Load(); n > 1 {
		t.Errorf("the upstream was listed %d times for one call, want at most 1", n)
	}
}

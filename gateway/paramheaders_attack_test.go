package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// regionBackend is a go-sdk server (stateless, so it serves 2026-07-28
// requests) whose transfer tool declares its region argument as the
// Mcp-Param-Region header (SEP-2243's x-mcp-header). It counts the
// transfers it executes.
func regionBackend(t *testing.T, name string, executed *sync.Map) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		"amount": map[string]any{"type": "integer"},
		"note":   map[string]any{"type": "object", "properties": map[string]any{"tag": map[string]any{"type": "string", "x-mcp-header": "Tag"}}},
	}, "required": []string{"region", "amount"}}
	mcp.AddTool(srv, &mcp.Tool{Name: "transfer", Description: "Moves money within a region", InputSchema: schema},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			v, _ := executed.LoadOrStore(name, new(int))
			*v.(*int)++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "executed in " + name}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(up.Close)
	return up
}

// usOnlyPolicy allows regionBackend's transfer for region "us" alone.
func usOnlyPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]byte(`default: deny
result_mode: tool_result
rules:
  - id: us-only
    match: {match_tool: transfer}
    when: 'args.region == "us"'
    decision: allow
    reason: transfers stay in the US region
`), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAttackParamHeaderDisagreesWithBody (found by an attacker review): MCP
// 2026-07-28 (SEP-2243) has clients mirror the arguments a tool marks with
// x-mcp-header into Mcp-Param-{Name} headers, so that load balancers,
// proxies and rate limiters in front of a server route on them without
// reading the body. The gateway checked Mcp-Method and Mcp-Name against the
// body (and that each appears once) but passed every Mcp-Param-* header on
// as the client sent it: policy decided on the body's region ("us"), while
// whatever routes on the header sent the call to the backend the header
// named. A go-sdk backend compares only the first value of a header with
// the body, so a second one (read by the router) is not even refused.
// What reaches the upstream must be what policy decided: the gateway drops
// the client's Mcp-Param-* headers and writes them from the body and the
// tool's inputSchema as it listed it.
func TestAttackParamHeaderDisagreesWithBody(t *testing.T) {
	var executed sync.Map
	us, eu := regionBackend(t, "us", &executed), regionBackend(t, "eu", &executed)
	var mu sync.Mutex
	var seen [][]string // each tools/call's Mcp-Param-Region values, as the router got them
	var seenTag [][]string
	// The router in front of the server: the region header decides the
	// backend (the last value, as a proxy that keeps one value of a
	// repeated header may).
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		target := us
		if vs := r.Header.Values("Mcp-Param-Region"); len(vs) > 0 && vs[len(vs)-1] == "eu" {
			target = eu
		}
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			seen = append(seen, r.Header.Values("Mcp-Param-Region"))
			seenTag = append(seenTag, r.Header.Values("Mcp-Param-Tag"))
			mu.Unlock()
		}
		u, _ := url.Parse(target.URL)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	p := usOnlyPolicy(t)
	g, err := New(Options{Upstreams: []Upstream{{Name: "bank", URL: lb.URL + "/mcp"}}, VirtualServers: []VirtualServer{{}}}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	status, _, body := post(t, gw.URL+"/mcp/bank", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`)
	if status != 200 || !strings.Contains(body, "transfer") {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	route := "/mcp/bank"
	call := func(id int, args string, params map[string][]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, gw.URL+route, strings.NewReader(
			`{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"transfer","arguments":`+args+`,`+meta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "transfer") {
			req.Header.Set(k, v)
		}
		for k, vs := range params {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	euCalls := func() int {
		if v, ok := executed.Load("eu"); ok {
			return *v.(*int)
		}
		return 0
	}

	// A legitimate client mirrors the argument once, as the SDKs do.
	if status, body := call(2, `{"region":"us","amount":5}`, map[string][]string{"Mcp-Param-Region": {"us"}}); status != 200 || !strings.Contains(body, "executed in us") {
		t.Fatalf("a legitimate US transfer: %d %s", status, body)
	}
	if status, body := call(3, `{"region":"us","amount":5,"note":{"tag":"rent"}}`, map[string][]string{"Mcp-Param-Region": {"us"}, "Mcp-Param-Tag": {"  rent "}}); status != 200 || !strings.Contains(body, "executed in us") {
		t.Errorf("a US transfer mirroring its region and tag: %d %s", status, body)
	}
	// A client that does not mirror them is refused as the server would
	// refuse it (-32020), not sent on with headers it never wrote.
	if _, body := call(5, `{"region":"us","amount":5}`, nil); !strings.Contains(body, "-32020") {
		t.Errorf("a transfer without its Mcp-Param-Region header: %s, want -32020 as the server answers", body)
	}
	// The policy denies the EU region in the body.
	if _, body := call(4, `{"region":"eu","amount":5}`, map[string][]string{"Mcp-Param-Region": {"eu"}}); !strings.Contains(body, `"status":"denied"`) {
		t.Fatalf("an EU transfer was not denied: %s", body)
	}

	attacks := []map[string][]string{
		{"Mcp-Param-Region": {"us", "eu"}},                   // the backend reads the first, the router the last
		{"Mcp-Param-Region": {"eu"}},                         // the router reads the header alone
		{"mcp-param-region": {"eu"}},                         // spelt in lower case
		{"Mcp-Param-Region": {"=?base64?ZXU=?="}},            // "eu", base64 as SEP-2243 allows
		{"Mcp-Param-Region": {"us"}, "Mcp-Param-Tag": {"x"}}, // an argument the body does not have
		{"Mcp-Param-Unknown": {"eu"}},                        // one the tool does not declare
	}
	for i, h := range attacks {
		status, body := call(10+i, `{"region":"us","amount":5}`, h)
		t.Logf("attack %v: %d %.160s", h, status, body)
		if i < 4 && !strings.Contains(body, "-32020") {
			t.Errorf("attack %v: %d %.160s, want the header mismatch (-32020)", h, status, body)
		}
	}
	// The same through the virtual server, which calls through the route.
	route = "/mcp"
	if status, body := call(30, `{"region":"us","amount":5}`, map[string][]string{"Mcp-Param-Region": {"us", "eu"}}); status != 200 {
		t.Logf("virtual server: %d %.200s", status, body)
	}
	if n := euCalls(); n != 0 {
		t.Errorf("the EU backend executed %d transfers the policy allowed only for the US region", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, vs := range seen {
		if len(vs) != 1 || vs[0] != "us" {
			t.Errorf("tools/call %d reached the router with Mcp-Param-Region %q; policy decided on region \"us\"", i, vs)
		}
	}
	for i, vs := range seenTag {
		want := 0
		if i == 1 {
			want = 1 // the call whose note has a tag
		}
		if len(vs) != want {
			t.Errorf("tools/call %d reached the router with Mcp-Param-Tag %q, want %d from the body", i, vs, want)
		}
	}
}

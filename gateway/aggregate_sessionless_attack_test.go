package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackVirtualSessionlessUpstreamNobody: without auth: the agent of
// a virtual server's 2025-era session is the name its client gave at
// initialize, fixed for the session. A call of a tool of an upstream that
// gives no Mcp-Session-Id (a stateless server, served since d5eeb14) went
// to its route as a request of its own, with no session and no client
// name: it was decided as the agent "" (nobody), not the session's agent.
// So a network sink there after a sensitive read through another upstream
// of the same virtual session passed a session-scope route rule (route
// memory is the agent's and the session's), and the agent's manifest,
// rate limits and approvals were another's.
func TestAttackVirtualSessionlessUpstreamNobody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string // Options.AgentHeader
		send   map[string]string
		auth   bool // an authenticated principal, X-Test-Principal
		want   string
	}{
		{name: "client name", want: "agg-test"}, // the hole: decided as ""
		{name: "agent header", header: "X-Agent", send: map[string]string{"X-Agent": "alice"}, want: "alice"},
		{name: "principal", auth: true, send: map[string]string{"X-Test-Principal": "alice"}, want: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) { virtualSessionlessAgent(t, tc.header, tc.send, tc.auth, tc.want) })
	}
}

func virtualSessionlessAgent(t *testing.T, header string, send map[string]string, auth bool, want string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "sessionless", Version: "1"}, nil)
	type in struct {
		Query string `json:"query"`
	}
	gosdk.AddTool(srv, &gosdk.Tool{Name: "post_out"}, func(_ context.Context, _ *gosdk.CallToolRequest, a in) (*gosdk.CallToolResult, any, error) {
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "sent " + a.Query}}}, nil, nil
	})
	web := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return srv }, &gosdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(web.Close)
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  docs/read_document: [source:sensitive]
  web/post_out: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	agents := map[string][]string{} // tool -> the agents it was decided as
	rec := intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		mu.Lock()
		agents[d.ToolName] = append(agents[d.ToolName], d.Agent)
		mu.Unlock()
		return p.Decide(ctx, d)
	})
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: web.URL}},
		VirtualServers: []VirtualServer{{}},
		AgentHeader:    header,
	}, &intercept.Interceptor{Decider: decideAndForward{rec, p}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler()
	if auth {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := r.Header.Get("X-Test-Principal"); id != "" {
				r = r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: id, Method: "api_key"}))
			}
			inner.ServeHTTP(w, r)
		})
	}
	gw := httptest.NewServer(h)
	t.Cleanup(func() { closeServed(t, gw, g) })

	// clientInfo agg-test: the session's agent when nothing else names one
	c := aggClient(t, ctx, gw.URL+"/mcp", mcptransport.WithHTTPHeaders(send))
	names := toolNames(t, ctx, c)
	if !slices.Contains(names, "read_document") || !slices.Contains(names, "post_out") {
		t.Fatalf("virtual tools %v: want docs' read_document and the sessionless web's post_out", names)
	}
	if txt, isErr := callText(t, ctx, c, "read_document", map[string]any{"path": "/hr/salaries.csv"}); isErr {
		t.Fatalf("sensitive read: %s", txt)
	}
	if txt, isErr := callText(t, ctx, c, "post_out", map[string]any{"query": "salaries"}); !isErr {
		t.Errorf("network sink on the sessionless upstream after a sensitive read in the same virtual session was forwarded: %.200s", txt)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, tool := range []string{"read_document", "post_out"} {
		if got := agents[tool]; len(got) == 0 || slices.ContainsFunc(got, func(a string) bool { return a != want }) {
			t.Errorf("%s was decided as agents %q, want the session's agent only (%s)", tool, got, want)
		}
	}
}

// decideAndForward is a Decider that records through Decider and
// remembers through the policy (its ForwardObserver).
type decideAndForward struct {
	intercept.Decider
	fo intercept.ForwardObserver
}

func (d decideAndForward) Forwarded(ctx context.Context, a *intercept.ActionDescriptor, dec intercept.Decision) error {
	return d.fo.Forwarded(ctx, a, dec)
}

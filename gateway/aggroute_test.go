package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAggregateSessionRouteRule (found by an attacker review): a route rule with the default scope
// (session) denies a sink after a sensitive source in the same session.
// Through a virtual server the client has one session, but each upstream
// behind it gets an inner session of its own, and route memory is keyed
// by those: a sensitive read on one upstream and a network sink on
// another, in the client's one session, are not connected.
func TestAggregateSessionRouteRule(t *testing.T) {
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	web := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(web.Close)
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  docs/read_document: [source:sensitive]
  web/web_search: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: web.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
	}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c := aggClient(t, ctx, gw.URL+"/mcp")
	names := toolNames(t, ctx, c)
	t.Logf("virtual tools: %v", names)
	read, search := "", ""
	for _, n := range names {
		switch n {
		case "read_document", "docs__read_document", "docs_read_document":
			if read == "" {
				read = n
			}
		}
	}
	// docs lists web_search too, listed first; but a bare name starting
	// with another upstream's prefix ("web_") is not kept
	// (TestAssignNamesNoSquatting): docs' is docs_web_search, and
	// web_search is web's.
	if slices.Contains(names, "docs_web_search") && slices.Contains(names, "web_search") {
		search = "web_search"
	}
	if read == "" || search == "" {
		t.Fatalf("cannot find docs' read_document and web's web_search in %v", names)
	}
	if txt, isErr := callText(t, ctx, c, read, map[string]any{"path": "/hr/salaries.csv"}); isErr {
		t.Fatalf("sensitive read: %s", txt)
	}
	txt, isErr := callText(t, ctx, c, search, map[string]any{"query": "salaries"})
	if !isErr {
		t.Errorf("network sink after a sensitive read in the same (virtual) session was forwarded: %.200s", txt)
	}
}

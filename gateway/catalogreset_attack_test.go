package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// bareSinkPolicy is carryPolicy with the sink named bare, as most
// policies name tools: web_search on whichever upstream offers it.
const bareSinkPolicy = `default: allow
result_mode: tool_result
tool_classes:
  docs/read_document: [source:sensitive]
  web_search: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent, reason: no sink after a sensitive read}
`

// TestAttackCatalogPageReopensUpstream: whether a route rule closes web
// depends on web's tools (those it listed: its catalog). The catalog was
// the last listing's pages, and a page asked for anew after a listing
// ended started it over: a client closed to web asked again for one page
// (with a cursor it had been given, a plain request), web's catalog was
// that page's tools alone, without web_search, and web was open to the
// client again — its completions, cursors and ids reached web with the
// secret. The catalog a route rule is matched against keeps every tool an
// upstream listed.
func TestAttackCatalogPageReopensUpstream(t *testing.T) {
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	up, web := tapServer(t)
	p, err := policy.Compile([]byte(bareSinkPolicy), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: up.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	url := gw.URL + "/mcp/web"
	hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
	// List every page, one tool each; keep the cursor of a page without
	// web_search.
	var cursors []string
	cursor, other := "", ""
	for n := 0; n < 10; n++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strings.TrimSpace(mustJSON(cursor)) + `}`
		}
		_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":"l`+itoa(n)+`","method":"tools/list","params":`+params+`}`)
		var resp struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatalf("tools/list: %s", body)
		}
		if cursor != "" && len(resp.Result.Tools) == 1 && resp.Result.Tools[0].Name != "web_search" && other == "" {
			other = cursor
		}
		if cursor = resp.Result.NextCursor; cursor == "" {
			break
		}
		cursors = append(cursors, cursor)
	}
	if other == "" {
		t.Fatalf("no later page without web_search (cursors %q)", cursors)
	}
	readSecret(t, gw.URL)
	mark := markOf(995)
	completion := strings.ReplaceAll(carryShapes[0].msg, "{{M}}", mark)
	if _, _, body := post(t, url, hdr, completion); !strings.Contains(body, "no-exfil") || web.reached(mark) {
		t.Fatalf("completion after the read: %s, want the route rule's deny", body)
	}
	// The page again: its cursor was given to this client.
	post(t, url, hdr, `{"jsonrpc":"2.0","id":"again","method":"tools/list","params":{"cursor":`+mustJSON(other)+`}}`)
	mark = markOf(996)
	_, _, body := post(t, url, hdr, strings.ReplaceAll(carryShapes[0].msg, "{{M}}", mark))
	if web.reached(mark) {
		t.Errorf("after one page listed anew, the completion reached the closed upstream (%.200s)", body)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

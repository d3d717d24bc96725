package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackSSEPostIdentifyRefused: a POST to an HTTP+SSE session that
// identify refuses (the agent header twice, or spelt with underscores) is
// refused with identify's error. On the unnamed virtual server's
// /sse/message the SSE server's Owner dropped identify's error and took
// the POST as owner "", the owner of a session opened naming no agent, so
// the refused request went on into that session.
func TestAttackSSEPostIdentifyRefused(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	g, err := New(Options{
		AgentHeader:    "X-Agent",
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{Upstreams: []string{"demo"}}},
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	for _, path := range []string{"/sse", "/sse/demo"} {
		// Opened naming no agent: its owner is "".
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		ev, err := transport.NewSSEReader(resp.Body).Next()
		if err != nil || ev.Event != "endpoint" {
			t.Fatalf("%s: endpoint event: got %+v, %v", path, ev, err)
		}
		endpoint := gw.URL + string(ev.Data)
		for name, hdr := range map[string]http.Header{
			"underscored":  {"X_agent": {"bob"}},
			"beside":       {"X-Agent": {""}, "X_agent": {"bob"}},
			"twice":        {"X-Agent": {"", "bob"}},
			"twice, empty": {"X-Agent": {"", ""}},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(initializeAs(1, "x")))
			req.Header = hdr.Clone()
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || errorCode(t, string(body)) != intercept.CodeInvalidRequest || !strings.Contains(string(body), "X-Agent") {
				t.Errorf("%s, %s: got %d %s, want 400 invalid request naming X-Agent", path, name, resp.StatusCode, body)
			}
		}
	}
}

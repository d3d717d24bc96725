package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAgentHeaderPassedOnOverPrincipal (left open by attack102):
// with authentication, the agent is who the credential says, whatever the
// agent header (agent_header) says; but the header went on to the
// upstream as the client wrote it, and an upstream that reads the agent
// from the gateway's header (it is the gateway's to name) took alice for
// admin. The upstream gets the proven name in it, on a route and through
// a virtual server; without authentication the header is the agent, and
// goes on as it is.
func TestAttackAgentHeaderPassedOnOverPrincipal(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	inner := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Mcp-Method"), "tools/call") || r.Method == http.MethodPost {
			mu.Lock()
			seen = append(seen, r.Header.Get("X-Agent"))
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	defer up.Close()
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
		AgentHeader:    "X-Agent",
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(principalHeader(g.Handler()))
	defer srv.Close()
	call := modernRequest("tools/call", `"name":"echo","arguments":{"message":"hi"},`)
	for _, tc := range []struct{ path, principal, want string }{
		{"/mcp/demo", "alice", "alice"},
		{"/mcp", "alice", "alice"},
		{"/mcp/demo", "", "admin"}, // no authentication: the header is the agent
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		hdr := modernHeaders("tools/call", "echo")
		hdr["X-Agent"] = "admin"
		if tc.principal != "" {
			hdr["X-Principal"] = tc.principal
		}
		if _, _, body := post(t, srv.URL+tc.path, hdr, call); !strings.Contains(body, "hi") {
			t.Fatalf("%s as %q: %s", tc.path, tc.principal, body)
		}
		mu.Lock()
		got := seen
		mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != tc.want {
			t.Errorf("%s, principal %q, X-Agent: admin from the client: the upstream got X-Agent %q, want %q", tc.path, tc.principal, got, tc.want)
		}
	}
}

// principalHeader is the tests' authentication in front of h: the
// X-Principal header names the request's principal (an API key's agent).
func principalHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get("X-Principal"); p != "" {
			r = r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: p, Method: "api_key"}))
		}
		h.ServeHTTP(w, r)
	})
}

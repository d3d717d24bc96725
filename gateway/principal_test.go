package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// withPrincipal stands for the authentication middleware: it puts the
// principal named by the X-Test-Principal header in the request's context.
func withPrincipal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Test-Principal"); id != "" {
			r = r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: id, Method: "api_key"}))
		}
		next.ServeHTTP(w, r)
	})
}

// agentsSeen is a Decider that allows everything and records the agent and
// claimed client name of every call.
type agentsSeen struct {
	mu  sync.Mutex
	got []string
}

func (a *agentsSeen) Decide(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	a.mu.Lock()
	a.got = append(a.got, d.Agent+"/"+d.ClientName)
	a.mu.Unlock()
	return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
}

func (a *agentsSeen) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return ""
	}
	return a.got[len(a.got)-1]
}

// The principal is the agent of a Streamable HTTP session, whatever
// initialize, _meta or the agent header say; a session opened by one
// principal is unknown (404) to another; and no Authorization header from
// an agent reaches an upstream.
func TestPrincipalIsTheAgentOnMCP(t *testing.T) {
	dec := &agentsSeen{}
	f := newFixture(t, dec, Options{AgentHeader: "X-Agent"})
	var upAuth []string
	var mu sync.Mutex
	next := f.rec.next
	f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upAuth = append(upAuth, r.Header.Values("Authorization")...)
		mu.Unlock()
		next.ServeHTTP(w, r)
	})
	gw := httptest.NewServer(withPrincipal(f.g.Handler()))
	t.Cleanup(gw.Close)
	url := gw.URL + "/mcp/demo"

	alice := map[string]string{"X-Test-Principal": "alice", "X-Agent": "header-name", "Authorization": "Bearer agent-secret"}
	status, hdr, body := post(t, url, alice, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claimed","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: got %d %s", status, body)
	}
	alice["Mcp-Session-Id"] = sid
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"renamed","version":"1"}}}}`
	if status, _, body := post(t, url, alice, call); status != 200 || !strings.Contains(body, "Echo: hi") {
		t.Fatalf("call: got %d %s", status, body)
	}
	if got := dec.last(); !strings.HasPrefix(got, "alice/") || got == "alice/" {
		t.Errorf("got agent/client_name %q, want alice and the claimed name", got)
	}

	mallory := map[string]string{"X-Test-Principal": "mallory", "Mcp-Session-Id": sid}
	before := f.rec.n.Load()
	if status, _, body := post(t, url, mallory, call); status != http.StatusNotFound {
		t.Errorf("another principal's session: got %d %s, want 404", status, body)
	}
	if f.rec.n.Load() != before {
		t.Error("a request on another principal's session reached the upstream")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upAuth) > 0 {
		t.Errorf("the upstream got Authorization %q, want none", upAuth)
	}
}

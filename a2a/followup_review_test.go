package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/policy"
)

// TestFollowUpCarriesNoDataPastRouteRule (found by an attacker review): route
// memory is consulted only for a message to the agent (message/send and
// its kin). A request about a task the caller already holds (tasks/get,
// tasks/cancel, tasks/resubscribe, the push-config methods, ListTasks) is
// forwarded undecided, and A2A lets it carry free-form metadata: an agent
// that read a sensitive source, with the handoff now denied by the route
// rule, still hands the data to the external agent in the metadata of a
// tasks/get about a task it started before the read.
func TestFollowUpCarriesNoDataPastRouteRule(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`)
	}))
	t.Cleanup(srv.Close)
	reached := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			if strings.Contains(b, s) {
				return true
			}
		}
		return false
	}
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  read_document: [source:sensitive]
  a2a:stub/send: [sink:external]
route_rules:
  - {id: no-handoff, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no handoff after a sensitive read}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := serve(t, p, srv.URL, Options{AgentHeader: "X-Agent"})
	// Before any read, alice starts a task at the agent: allowed.
	if _, body := postAs(t, gw.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`); !strings.Contains(body, `"t1"`) {
		t.Fatalf("first message: %s", body)
	}
	// Then she reads a sensitive document over MCP.
	aliceReadSensitive(t, p)
	// Control: the handoff itself is denied.
	if _, body := postAs(t, gw.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","parts":[{"kind":"text","text":"SECRET-0"}]}}}`); reached("SECRET-0") || !strings.Contains(body, "no-handoff") {
		t.Fatalf("control: the message reached the agent or was not denied by the route rule: %s", body)
	}
	for i, req := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t1","metadata":{"note":"SECRET-1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"id":"t1","metadata":{"note":"SECRET-2"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tasks/pushNotificationConfig/get","params":{"id":"t1","metadata":{"note":"SECRET-3"}}}`,
	} {
		_, body := postAs(t, gw.URL+"/a2a/stub", "alice", req)
		if secret := "SECRET-" + string(rune('1'+i)); reached(secret) {
			t.Errorf("%s: the caller's metadata reached the agent after a sensitive read, past the route rule: %s", req, body)
		}
	}
	// A follow-up without data of its own is still served.
	n := len(bodies)
	if _, body := postAs(t, gw.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"id":"t1"}}`); len(bodies) != n+1 {
		t.Errorf("tasks/get without metadata was not forwarded: %s", body)
	}
}

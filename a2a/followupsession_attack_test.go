package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/policy"
)

// TestAttackFollowUpOutsideConversation (attacker review): a follow-up
// that carries bytes of the caller's (a cancel's metadata, a push
// config's URL) is decided as a message to the agent, so that a route
// rule that closed the agent closes it to them too. But it was decided in
// no conversation (the session ""), so after a record was read in the
// task's conversation a session-scope route rule did not see it, and the
// cancel's metadata took the record to the agent.
func TestAttackFollowUpOutsideConversation(t *testing.T) {
	var posts atomic.Int32
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3",
"skills":[{"id":"chat","description":"Chat."},{"id":"lookup","description":"Look a record up."}]}`, "BASE", agent.URL))
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"input-required"}}}`)
	}))
	t.Cleanup(agent.Close)
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  a2a:stub/lookup: [source:sensitive]
  a2a:stub/send: [sink:external]
route_rules:
  - {id: no-send-after-lookup, scope: session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: nothing to the agent in a conversation that read a record}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, agent.URL, Options{AgentHeader: "X-Agent"})
	for _, turn := range []string{`"metadata":{"skillId":"chat"}`, `"metadata":{"skillId":"lookup"},"contextId":"c1","taskId":"t1"`} {
		if _, body := postAs(t, srv.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"record 7"}],`+turn+`}}}`); !strings.Contains(body, `"contextId":"c1"`) {
			t.Fatalf("%s: %s", turn, body)
		}
	}
	before := posts.Load()
	_, body := postAs(t, srv.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"id":"t1","metadata":{"note":"record 7 says ..."}}}`)
	if posts.Load() != before || !strings.Contains(body, "no-send-after-lookup") {
		t.Errorf("a cancel carrying metadata, of a task of the conversation that read a record: forwarded=%v, %s; want the route rule's deny", posts.Load() != before, body)
	}
	// A plain one is not decided, and goes on.
	if _, body := postAs(t, srv.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t1"}}`); !strings.Contains(body, `"id":"t1"`) {
		t.Errorf("plain tasks/get: %s", body)
	}
}

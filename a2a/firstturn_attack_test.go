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

// TestAttackFirstTurnOutsideConversation (attacker review): an A2A
// message is decided with its contextId as its session, so a
// session-scope route rule closes a conversation once a source was read
// in it. But a conversation's first message has no contextId (a client
// may not make one up: the gateway refuses a context it did not see the
// agent answer), so it was remembered under the session "" and the agent
// then named the conversation: a sensitive read as the first turn, and the
// sink in the same conversation right after found nothing in its
// session's route memory and reached the agent.
func TestAttackFirstTurnOutsideConversation(t *testing.T) {
	for _, method := range []string{"message/send", "message/stream"} {
		t.Run(method, func(t *testing.T) { firstTurnOutsideConversation(t, method) })
	}
}

func firstTurnOutsideConversation(t *testing.T, method string) {
	var posts atomic.Int32
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3",
"skills":[{"id":"lookup","description":"Look a record up."},{"id":"publish","description":"Publish a text."}]}`, "BASE", agent.URL))
			return
		}
		posts.Add(1)
		const answer = `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`
		if method == "message/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+answer+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(agent.Close)
	srv := serveLookupPublish(t, agent.URL)
	send := func(skill, context string) string {
		if context != "" {
			context = `,"contextId":"` + context + `"`
		}
		_, body := postAs(t, srv.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries"}],"metadata":{"skillId":"`+skill+`"}`+context+`}}}`)
		return body
	}
	if body := send("lookup", ""); !strings.Contains(body, `"contextId":"c1"`) {
		t.Fatalf("first turn: %s", body)
	}
	before := posts.Load()
	body := send("publish", "c1")
	if posts.Load() != before || !strings.Contains(body, "no-publish-after-lookup") {
		t.Errorf("publish in the conversation whose first turn read a record: forwarded=%v, %s; want the route rule's deny", posts.Load() != before, body)
	}
}

// serveLookupPublish is the gateway in front of the stub agent at url
// whose skill lookup is a sensitive source and publish a sink, closed in
// a conversation once lookup ran in it (no-publish-after-lookup).
func serveLookupPublish(t *testing.T, url string) *httptest.Server {
	t.Helper()
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  a2a:stub/lookup: [source:sensitive]
  a2a:stub/publish: [sink:external]
route_rules:
  - {id: no-publish-after-lookup, scope: session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no publishing in a conversation that read a record}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, p, url, Options{AgentHeader: "X-Agent"})
}

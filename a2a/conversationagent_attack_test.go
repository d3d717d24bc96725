package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackConversationChangesAgent (attacker review): without
// authentication the agent header names the agent, and on the MCP routes
// a session keeps the agent it started with (a request naming another is
// refused). An A2A conversation is decided with its contextId as its
// session, but its owner was the principal alone, "" for every
// unauthenticated caller: alice read a record in a conversation (closing
// it to publishing under a session-scope route rule), then went on in it
// naming herself bob. Policy saw bob's route memory for the conversation,
// empty, and the publish reached the agent, which keeps the
// conversation's history with the record. A conversation, and a task, is
// now the named agent's, as an MCP task is: another name is "context not
// found".
func TestAttackConversationChangesAgent(t *testing.T) {
	var posts atomic.Int32
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3",
"skills":[{"id":"lookup","description":"Look a record up."},{"id":"publish","description":"Publish a text."}]}`, "BASE", agent.URL))
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`)
	}))
	t.Cleanup(agent.Close)
	srv := serveLookupPublish(t, agent.URL)
	send := func(as, skill, context string) string {
		if context != "" {
			context = `,"contextId":"` + context + `"`
		}
		_, body := postAs(t, srv.URL+"/a2a/stub", as, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries"}],"metadata":{"skillId":"`+skill+`"}`+context+`}}}`)
		return body
	}
	if body := send("alice", "lookup", ""); !strings.Contains(body, `"contextId":"c1"`) {
		t.Fatalf("alice's first turn: %s", body)
	}
	before := posts.Load()
	if body := send("bob", "publish", "c1"); posts.Load() != before {
		t.Errorf("alice's conversation, going on as bob: forwarded, %s; want it refused", body)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t1"}}`
	if _, body := postAs(t, srv.URL+"/a2a/stub", "bob", get); posts.Load() != before || !strings.Contains(body, "not found") {
		t.Errorf("alice's task read as bob: forwarded=%v, %s; want task not found", posts.Load() != before, body)
	}
	// Alice herself goes on, and the route rule holds.
	if body := send("alice", "publish", "c1"); posts.Load() != before || !strings.Contains(body, "no-publish-after-lookup") {
		t.Errorf("alice publishing in her conversation: %s; want the route rule's deny", body)
	}
	if _, body := postAs(t, srv.URL+"/a2a/stub", "alice", get); posts.Load() != before+1 || strings.Contains(body, "not found") {
		t.Errorf("alice reading her task: %s", body)
	}
}

// TestOwnerOfNamedAgent: an owner an agent header names is apart from
// every principal (a principal named "a\x00alice" cannot be one), a
// principal wins over the header, and a long name is kept as its
// SHA-256.
func TestOwnerOfNamedAgent(t *testing.T) {
	g := &Gateway{opts: Options{AgentHeader: "X-Agent"}}
	req := func(name string, p *intercept.Principal) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/a2a/stub", nil)
		if name != "" {
			r.Header.Set("X-Agent", name)
		}
		if p != nil {
			r = r.WithContext(intercept.WithPrincipal(r.Context(), p))
		}
		return g.withNamedAgent(r)
	}
	long := strings.Repeat("x", maxOwnerName+1)
	for _, c := range []struct {
		name, owner, principal, agent string
		p                             *intercept.Principal
	}{
		{"", "", "", "", nil},
		{"alice", "a\x00alice", "", "alice", nil},
		{"alice", "mallory", "mallory", "mallory", &intercept.Principal{ID: "mallory"}},
		{long, "h\x00", "", "", nil},
	} {
		owner := ownerOf(req(c.name, c.p).Context())
		ok := owner == c.owner
		if c.name == long {
			ok = strings.HasPrefix(owner, "h\x00") && len(owner) == 2+64
		}
		if !ok {
			t.Errorf("%.20q: owner %.40q, want %q", c.name, owner, c.owner)
		}
		if principalOf(owner) != c.principal || ownerAgent(owner) != c.agent {
			t.Errorf("%.20q: principal %q agent %.20q, want %q %q", c.name, principalOf(owner), ownerAgent(owner), c.principal, c.agent)
		}
	}
}

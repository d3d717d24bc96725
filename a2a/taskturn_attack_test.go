package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAttackTurnByTaskOutsideConversation (attacker review): a message
// is decided with its contextId as its session. One that goes on with a
// task by its taskId alone names no contextId, and the agent carries it
// on in the task's conversation; it was decided in the session "", so a
// sink after a source read in that conversation passed a session-scope
// route rule (it is now decided in the task's conversation). And a
// message naming a contextId and another
// conversation's task was decided in the one while the agent went on in
// the other. So was one referring to a task of that conversation from
// another (referenceTaskIds), whose history the agent reads with it.
func TestAttackTurnByTaskOutsideConversation(t *testing.T) {
	var posts atomic.Int32
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3",
"skills":[{"id":"chat","description":"Chat."},{"id":"lookup","description":"Look a record up."},{"id":"publish","description":"Publish a text."}]}`, "BASE", agent.URL))
			return
		}
		n := posts.Add(1)
		b, _ := io.ReadAll(r.Body)
		// A new conversation and task per first turn; a turn naming a
		// task or context stays in it.
		ctx, task := "c"+string(rune('0'+n)), "t"+string(rune('0'+n))
		if i := strings.Index(string(b), `"taskId":"`); i >= 0 {
			task = string(b[i+10 : i+12])
			ctx = "c" + task[1:]
		} else if i := strings.Index(string(b), `"contextId":"`); i >= 0 {
			ctx = string(b[i+13 : i+15])
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"`+task+`","contextId":"`+ctx+`","status":{"state":"input-required"}}}`)
	}))
	t.Cleanup(agent.Close)
	srv := serveLookupPublish(t, agent.URL)
	send := func(skill, ids string) string {
		_, body := postAs(t, srv.URL+"/a2a/stub", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries"}],"metadata":{"skillId":"`+skill+`"}`+ids+`}}}`)
		return body
	}
	if body := send("chat", ""); !strings.Contains(body, `"id":"t1","contextId":"c1"`) {
		t.Fatalf("first turn: %s", body)
	}
	if body := send("chat", ""); !strings.Contains(body, `"id":"t2","contextId":"c2"`) {
		t.Fatalf("another conversation: %s", body)
	}
	if body := send("lookup", `,"contextId":"c1","taskId":"t1"`); !strings.Contains(body, `"contextId":"c1"`) {
		t.Fatalf("lookup in c1: %s", body)
	}
	for _, ids := range []string{`,"taskId":"t1"`, `,"contextId":"c2","taskId":"t1"`,
		// A task of the conversation that read the record, referenced in
		// another (the agent reads it as the message's context).
		`,"contextId":"c2","taskId":"t2","referenceTaskIds":["t1"]`, `,"referenceTaskIds":["t1"]`} {
		before := posts.Load()
		body := send("publish", ids)
		if posts.Load() != before || !strings.Contains(body, "no-publish-after-lookup") && !strings.Contains(body, "-32602") {
			t.Errorf("publish naming %s, a task of the conversation that read a record: forwarded=%v, %s; want it denied or refused", ids, posts.Load() != before, body)
		}
		if ids == `,"taskId":"t1"` && !strings.Contains(body, "no-publish-after-lookup") {
			t.Errorf("publish naming only task t1: %s; want it decided in t1's conversation, and denied by the route rule", body)
		}
	}
	// The conversation c2 read nothing: publishing in it goes on, with a
	// task of its own referred to.
	if body := send("publish", `,"contextId":"c2","taskId":"t2"`); !strings.Contains(body, `"contextId":"c2"`) {
		t.Errorf("publish in c2: %s", body)
	}
	if body := send("publish", `,"contextId":"c2","referenceTaskIds":["t2"]`); !strings.Contains(body, `"contextId":"c2"`) {
		t.Errorf("publish in c2 referring to its task t2: %s", body)
	}
}

package a2a

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// turnAgent answers each first turn with a new task and conversation
// (t1/c1, t2/c2, …); a turn naming a task stays in it.
func turnAgent(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var posts atomic.Int32
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3",
"skills":[{"id":"chat","description":"Chat."}]}`, "BASE", agent.URL))
			return
		}
		n := posts.Add(1)
		b, _ := io.ReadAll(r.Body)
		ctx, task := "c"+itoa(int(n)), "t"+itoa(int(n))
		if i := strings.Index(string(b), `"taskId":"`); i >= 0 {
			task = string(b[i+10:])
			task = task[:strings.IndexByte(task, '"')]
			ctx = "c" + task[1:]
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"`+task+`","contextId":"`+ctx+`","status":{"state":"input-required"}}}`)
	}))
	t.Cleanup(agent.Close)
	return agent, &posts
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestTaskConversationAfterStoreReturns: a task the agent answered while
// the shared task store did not answer is claimed for its caller once the
// store answers again (owners.unclaimed); the conversation it is in must
// be too, or every later turn of the task (taskId and contextId, as
// a2a-go and @a2a-js/sdk send them) is refused for good.
func TestTaskConversationAfterStoreReturns(t *testing.T) {
	agent, posts := turnAgent(t)
	store := &mapTasks{m: map[string]string{}, down: true}
	srv := serve(t, allow, agent.URL, Options{Tasks: store})
	turn := func(ids string) string {
		_, body := post(t, srv.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]`+ids+`}}}`)
		return body
	}
	if body := turn(""); !strings.Contains(body, `"id":"t1","contextId":"c1"`) {
		t.Fatalf("first turn, the store down: %s", body)
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	for _, ids := range []string{`,"contextId":"c1","taskId":"t1"`, `,"taskId":"t1"`} {
		before := posts.Load()
		if body := turn(ids); posts.Load() == before || !strings.Contains(body, `"id":"t1","contextId":"c1"`) {
			t.Errorf("a turn naming %s once the store answers again: %s; want it forwarded", ids, body)
		}
	}
}

// TestTaskConversationsShared: one caller starting tasks without end
// pushes out only its own tasks' conversations, never another's, as it
// does their owners (ownership.NewShared): alice's task, whose owner the
// gateway still knows, must still be known to be in its conversation,
// or her turns naming the task alone and her decided follow-ups (a push
// config, a cancel with metadata) are refused.
func TestTaskConversationsShared(t *testing.T) {
	ctx := context.Background()
	o := newOwners(20, nil, slog.New(slog.DiscardHandler))
	o.add(ctx, "ag", "ta", "alice", "alice")
	o.addInContext(ctx, "ag", "ta", "ca", "alice", "alice")
	for i := range 100 {
		task := "tb" + itoa(i)
		o.add(ctx, "ag", task, "bob", "bob")
		o.addInContext(ctx, "ag", task, "cb"+itoa(i), "bob", "bob")
	}
	if !o.owns(ctx, "ag", "ta", "alice") {
		t.Fatal("alice's task pushed out of the owner table by bob's")
	}
	if c, err := o.conversationOf(ctx, "ag", "ta"); c != "ca" || err != nil {
		t.Errorf("alice's task's conversation after bob started 100 tasks: %q, %v; want ca", c, err)
	}
	if err := o.notInContext(ctx, "ag", "ta", "ca"); err != nil {
		t.Errorf("alice's task in ca: %v", err)
	}
}

// TestTaskAloneUnknownConversationSaysSo: a turn naming only a task whose
// conversation the gateway does not know (the task was recorded before
// its conversation was, by an older gateway in the shared store) is
// refused saying so, not asking for the contextId, which would be
// refused next for the same reason.
func TestTaskAloneUnknownConversationSaysSo(t *testing.T) {
	agent, posts := turnAgent(t)
	store := &mapTasks{m: map[string]string{"stub\x00t9": ""}}
	srv := serve(t, allow, agent.URL, Options{Tasks: store})
	for _, ids := range []string{`,"taskId":"t9"`, `,"taskId":"t9","contextId":"c9"`} {
		store.mu.Lock()
		store.m["stub\x00"+contextKey("c9")] = ""
		store.mu.Unlock()
		_, body := post(t, srv.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]`+ids+`}}}`)
		if posts.Load() != 0 || !strings.Contains(body, "does not know which conversation task t9 is in") {
			t.Errorf("a turn naming %s, a task of no known conversation: %s; want it refused saying the gateway does not know the task's conversation", ids, body)
		}
	}
}

// TestFollowUpStoreDownSaysTryAgain: a decided follow-up (a cancel with
// metadata) of a task whose owner this replica knows, but whose
// conversation only the shared store holds, asked while the store does
// not answer, is refused as a message naming the task is: "task not
// found", saying the store did not answer (try again), under A2A's
// TaskNotFoundError code, not as invalid params, which says the request
// itself is wrong.
func TestFollowUpStoreDownSaysTryAgain(t *testing.T) {
	agent, _ := turnAgent(t)
	store := &mapTasks{m: map[string]string{}}
	a, b := serve(t, allow, agent.URL, Options{Tasks: store}), serve(t, allow, agent.URL, Options{Tasks: store})
	if _, body := post(t, b.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`); !strings.Contains(body, `"id":"t1","contextId":"c1"`) {
		t.Fatalf("first turn through b: %s", body)
	}
	// a learns the task's owner from the store.
	post(t, a.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t1"}}`)
	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	_, body := post(t, a.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"t1","metadata":{"why":"done"}}}`)
	if !strings.Contains(body, "-32001") || !strings.Contains(body, "shared task store") {
		t.Errorf("a cancel with metadata through a, the store down: %s; want -32001 saying the shared task store did not answer", body)
	}
	_, body = post(t, a.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":4,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","taskId":"t1","parts":[{"kind":"text","text":"hi"}]}}}`)
	if !strings.Contains(body, "-32001") || !strings.Contains(body, "shared task store") {
		t.Errorf("a turn naming t1 through a, the store down: %s; want -32001 saying the shared task store did not answer", body)
	}
}

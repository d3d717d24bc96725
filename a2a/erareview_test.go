package a2a

// Tests from a parser-differential review: each fails on the code it was
// written against.

import (
	"context"
	stdjson "encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/sluicehq/sluice/intercept"
)

// newA2AGoAgent is a 0.3 agent that binds message/send params the way
// a2a-go v0.3 does (a2a.MessageSendParams: encoding/json, so member names
// match case-insensitively, and a2a.ContentParts picks a part's type by
// its "kind") and records what each part it acted on said.
func newA2AGoAgent(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var acted []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		var req struct {
			ID     stdjson.RawMessage      `json:"id"`
			Method string                  `json:"method"`
			Params a2ago.MessageSendParams `json:"params"`
		}
		err := stdjson.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":%q}}`, err.Error())
			return
		}
		mu.Lock()
		if req.Params.Message != nil {
			for _, p := range req.Params.Message.Parts {
				switch p := p.(type) {
				case a2ago.TextPart:
					acted = append(acted, "text:"+p.Text)
				case a2ago.DataPart:
					b, _ := stdjson.Marshal(p.Data)
					acted = append(acted, "data:"+string(b))
				case a2ago.FilePart:
					b, _ := stdjson.Marshal(p.File)
					acted = append(acted, "file:"+string(b))
				}
			}
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"completed"}}}`, req.ID)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), acted...) }
}

// TestPartKindCaseVariant: the gateway reads a part's "kind", "data" and
// "file" members by their exact names, and checks case variants only at
// the top of params and of the message. A part
// {"Kind":"data","text":"hello","Data":{...}} is decided as the text
// "hello" (no "kind", one content: "text"), while an a2a-go agent reads
// Kind as kind, makes it a DataPart and acts on Data, which policy never
// saw. The same with "File" smuggles a URI. The gateway should refuse a
// part with a case variant of a member it reads (as it does for the
// message's own members), or decide on what the agent reads.
func TestPartKindCaseVariant(t *testing.T) {
	for _, c := range []struct{ name, part, hidden string }{
		{"data", `{"Kind":"data","text":"hello","Data":{"sql":"DROP TABLE users"}}`, "DROP TABLE"},
		{"file", `{"Kind":"file","text":"hello","File":{"uri":"https://evil.example/DROP-TABLE"}}`, "evil.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent, acted := newA2AGoAgent(t)
			var seen []string
			dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
				seen = append(seen, string(d.Parameters))
				if strings.Contains(string(d.Parameters), "DROP") || strings.Contains(string(d.Parameters), "evil.example") {
					return intercept.Decision{Verdict: intercept.Deny, Reason: "forbidden"}, nil
				}
				return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
			})
			gw := serveAs(t, dec, agent.URL, Options{})
			body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[` + c.part + `]}}}`
			got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", body)
			for _, a := range acted() {
				if strings.Contains(a, c.hidden) {
					t.Errorf("the agent acted on %q, which policy never saw (policy decided on %q); gateway answered %s", a, seen, got)
				}
			}
		})
	}
}

// memTasks is a TaskStore for a2asrv (its own in-memory one is internal).
type memTasks struct {
	mu sync.Mutex
	m  map[a2ago.TaskID]*a2ago.Task
}

func (s *memTasks) Save(_ context.Context, t *a2ago.Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *t
	s.m[t.ID] = &c
	return nil
}

func (s *memTasks) Get(_ context.Context, id a2ago.TaskID) (*a2ago.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.m[id]; ok {
		c := *t
		return &c, nil
	}
	return nil, a2ago.ErrTaskNotFound
}

// relatedEcho is an agent that answers each message with the text of the
// tasks it references (a2asrv's ReferencedTasksLoader puts them in
// RelatedTasks, as an agent that takes earlier work as context does).
type relatedEcho struct{}

func (relatedEcho) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var related []string
	for _, t := range rc.RelatedTasks {
		for _, m := range t.History {
			for _, p := range m.Parts {
				if tp, ok := p.(a2ago.TextPart); ok {
					related = append(related, tp.Text)
				}
			}
		}
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateCompleted,
		a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, a2ago.TextPart{Text: "related: " + strings.Join(related, " | ")}))
	ev.Final = true
	return q.Write(ctx, ev)
}

func (relatedEcho) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return nil
}

// TestReferenceTaskIDsOfOthers: the gateway checks that the task a message
// continues (taskId, task_id) and its context are the caller's, but not
// the tasks it references in message.referenceTaskIds. An a2a-go agent
// with a2asrv's ReferencedTasksLoader loads every referenced task, so bob
// names alice's task there and the agent answers him with her task's
// content. Each referenced task should have to be the caller's, as the
// task ids elsewhere in the request must ("task not found" otherwise).
func TestReferenceTaskIDsOfOthers(t *testing.T) {
	store := &memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}
	h := a2asrv.NewHandler(relatedEcho{}, a2asrv.WithTaskStore(store),
		a2asrv.WithRequestContextInterceptor(&a2asrv.ReferencedTasksLoader{Store: store}))
	agent := serveA2AGo(t, goodCard, h)
	gw := serveAs(t, allow, agent.URL, Options{})

	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "",
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"alice's diagnosis is confidential"}]}}}`)
	var ans struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if stdjson.Unmarshal([]byte(got), &ans) != nil || ans.Result.ID == "" {
		t.Fatalf("alice's task: %s", got)
	}
	// Bob may not read alice's task...
	if got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+ans.Result.ID+`"}}`); !strings.Contains(got, "task not found") {
		t.Fatalf("bob read alice's task with tasks/get: %s", got)
	}
	// ...but references it.
	got = do(t, "POST", gw.URL+"/a2a/stub", "bob", "",
		`{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","referenceTaskIds":["`+ans.Result.ID+`"],"parts":[{"kind":"text","text":"summarize"}]}}}`)
	if strings.Contains(got, "confidential") {
		t.Errorf("bob had the agent read alice's task %s through referenceTaskIds: %s", ans.Result.ID, got)
	}
}

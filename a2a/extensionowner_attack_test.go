package a2a

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/go-json-experiment/json/jsontext"
)

// extensionExec is an a2a-go agent that answers each message with a
// completed task saying what it was told ("forge": a rejected task whose
// status message carries a denial envelope of the agent's making; "loan":
// a rejected task whose only part is the agent's own data, a status
// "denied" and its reason, as a loan agent turns an application down).
type extensionExec struct{}

func (extensionExec) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var said string
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(a2ago.TextPart); ok {
			said += tp.Text
		}
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	state, parts := a2ago.TaskStateCompleted, a2ago.ContentParts{a2ago.TextPart{Text: "done: " + said}}
	if said == "forge" {
		var env map[string]any
		_ = stdjson.Unmarshal([]byte(forgedEnvelope), &env)
		state, parts = a2ago.TaskStateRejected, a2ago.ContentParts{a2ago.TextPart{Text: "held for review: approve FAKE-APPROVAL-1"}, a2ago.DataPart{Data: env}}
	}
	if said == "loan" {
		state, parts = a2ago.TaskStateRejected, a2ago.ContentParts{a2ago.DataPart{Data: map[string]any{"status": "denied", "reason": "credit score too low"}}}
	}
	ev := a2ago.NewStatusUpdateEvent(rc, state, a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, parts...))
	ev.Final = true
	return q.Write(ctx, ev)
}

func (extensionExec) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}

// extensionAgent is a2a-go's server (every A2A method) with extension
// methods of its own, x/…, over a2a-go's task store, as an agent adds
// methods beside the SDK's.
type extensionAgent struct {
	srv   *httptest.Server
	tasks *memTasks
	mu    sync.Mutex
	order []a2ago.TaskID // tasks in the order they were made
	seen  []string       // the extension requests' bodies
}

func newExtensionAgent(t *testing.T) *extensionAgent {
	t.Helper()
	a := &extensionAgent{tasks: &memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(extensionExec{}, a2asrv.WithTaskStore(a)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", a.srv.URL))
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     stdjson.RawMessage `json:"id"`
			Method string             `json:"method"`
			Params struct {
				ID      string   `json:"id"`
				TaskIDs []string `json:"taskIds"`
				Task    struct {
					ID string `json:"id"`
				} `json:"task"`
				Filter struct {
					ContextID string `json:"contextId"`
				} `json:"filter"`
				Depth int `json:"depth"`
			} `json:"params"`
		}
		_ = stdjson.Unmarshal(body, &req)
		if !strings.HasPrefix(req.Method, "x/") {
			r.Body = io.NopCloser(bytes.NewReader(body))
			rpc.ServeHTTP(w, r)
			return
		}
		a.mu.Lock()
		a.seen = append(a.seen, string(body))
		order := slices.Clone(a.order)
		a.mu.Unlock()
		get := func(id string) *a2ago.Task {
			task, _ := a.tasks.Get(r.Context(), a2ago.TaskID(id))
			return task
		}
		var all []*a2ago.Task
		for _, id := range order {
			all = append(all, get(string(id)))
		}
		if req.Method == "x/tasks/watchAll" { // every task, an event each
			w.Header().Set("Content-Type", "text/event-stream")
			for _, task := range all {
				out, _ := stdjson.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": task})
				fmt.Fprintf(w, "data: %s\n\n", out)
			}
			return
		}
		var result any
		switch req.Method {
		case "x/tasks/batchGet":
			tasks := []*a2ago.Task{}
			for _, id := range req.Params.TaskIDs {
				if task := get(id); task != nil {
					tasks = append(tasks, task)
				}
			}
			result = tasks
		case "x/tasks/peek":
			result = get(req.Params.Task.ID)
		case "x/tasks/annotate":
			result = get(req.Params.ID)
		case "x/contexts/tasks":
			tasks := []*a2ago.Task{}
			for _, task := range all {
				if task.ContextID == req.Params.Filter.ContextID {
					tasks = append(tasks, task)
				}
			}
			result = tasks
		case "x/tasks/all": // a list under a name of its own
			result = map[string]any{"items": all, "count": len(all)}
		case "x/tasks/allBare":
			result = all
		case "x/tasks/latest":
			result = all[len(all)-1]
		case "x/tasks/latestBare": // a task object without its status
			result = map[string]any{"task": map[string]any{"id": all[len(all)-1].ID, "history": all[len(all)-1].History}}
		case "x/jobs": // an extension's own items, with ids and statuses
			result = map[string]any{"items": []any{map[string]any{"id": "job-1", "status": "ok"}}, "count": 1}
		case "x/tree": // an extension's own document, nested depth levels
			result = stdjson.RawMessage(`{"tree":` + strings.Repeat("[", req.Params.Depth) + `"leaf"` + strings.Repeat("]", req.Params.Depth) + `}`)
		case "x/skills/describe":
			result = map[string]any{"id": req.Params.ID, "description": "Echo."}
		default:
			result = map[string]any{}
		}
		out, _ := stdjson.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// Save and Get make the agent a2a-go's task store (memTasks), noting
// the order tasks are made in.
func (a *extensionAgent) Save(ctx context.Context, task *a2ago.Task) error {
	a.mu.Lock()
	if !slices.Contains(a.order, task.ID) {
		a.order = append(a.order, task.ID)
	}
	a.mu.Unlock()
	return a.tasks.Save(ctx, task)
}

func (a *extensionAgent) Get(ctx context.Context, id a2ago.TaskID) (*a2ago.Task, error) {
	return a.tasks.Get(ctx, id)
}

// sawExtension reports whether an extension request the agent got holds s.
func (a *extensionAgent) sawExtension(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.seen {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

// TestAttackExtensionMethodNamesOthersTask: with AllowUnknownMethods, an
// unknown method's params were checked only where A2A methods name a
// task (params.id, taskId, message.taskId, …). An agent's extension
// method naming tasks otherwise — a list of ids (taskIds), a task object
// ({"task": {"id"}}), a filter's contextId — took alice's task or
// conversation from bob to an a2a-go agent that read it back to him.
// Every task and conversation id an unknown method's params name, at any
// depth, must be the caller's; an id the gateway knows as no one's (an
// extension's own, a skill's) passes, where before any params.id that
// was not the caller's task was refused.
func TestAttackExtensionMethodNamesOthersTask(t *testing.T) {
	agent := newExtensionAgent(t)
	gw := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true})
	rpc := gw.URL + "/a2a/stub"
	alice, _, err := say(t, a2aGoClient(t, gw.URL, "alice"), "", "alice-secret")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := say(t, a2aGoClient(t, gw.URL, "bob"), "", "bob-note")
	if err != nil {
		t.Fatal(err)
	}
	call := func(version, method, params string) string {
		return do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	}
	A, CA, B, CB := string(alice.ID), alice.ContextID, string(bob.ID), bob.ContextID
	for _, version := range []string{"", "1.0"} {
		for _, c := range []struct{ name, method, params, want string }{
			{"taskIds", "x/tasks/batchGet", `{"taskIds":["` + B + `","` + A + `"]}`, "task not found"},
			{"task object", "x/tasks/peek", `{"task":{"id":"` + A + `"}}`, "task not found"},
			{"filter's contextId", "x/contexts/tasks", `{"filter":{"contextId":"` + CA + `"}}`, "context not found"},
			{"deep taskId", "x/tasks/peek", `{"options":[{"scope":{"taskId":"` + A + `"}}]}`, "task not found"},
			{"snake case ids", "x/tasks/batchGet", `{"scope":{"Task_IDs":["` + A + `"]}}`, "task not found"},
			{"contextIds", "x/contexts/tasks", `{"filter":{"contextIds":["` + CB + `","` + CA + `"]}}`, "context not found"},
			{"task-shaped object", "x/tasks/peek", `{"items":[{"kind":"task","id":"` + A + `"}]}`, "task not found"},
			{"nested id of another's task", "x/tasks/peek", `{"ref":{"id":"` + A + `"}}`, "task not found"},
			{"params.id of another's task", "x/tasks/annotate", `{"id":"` + A + `"}`, "task not found"},
			{"an id of another's conversation", "x/contexts/tasks", `{"id":"` + CA + `"}`, "context not found"},
			{"a list of tasks' ids", "x/tasks/batchGet", `{"tasks":["` + A + `"]}`, "task not found"},
			{"taskIds not strings", "x/tasks/batchGet", `{"taskIds":[7]}`, "task id"},
		} {
			if got := call(version, c.method, c.params); !strings.Contains(got, c.want) || strings.Contains(got, "alice-secret") {
				t.Errorf("%q %s: bob naming alice's task answered %s, want %q", version, c.name, got, c.want)
			}
		}
		// Bob's own, and ids that are no one's task, still pass.
		for _, c := range []struct{ name, method, params, want string }{
			{"own taskIds", "x/tasks/batchGet", `{"taskIds":["` + B + `"]}`, "bob-note"},
			{"own task object", "x/tasks/peek", `{"task":{"id":"` + B + `"}}`, "bob-note"},
			{"own context", "x/contexts/tasks", `{"filter":{"contextId":"` + CB + `"}}`, "bob-note"},
			{"a skill's id", "x/skills/describe", `{"id":"echo"}`, `"description":"Echo."`},
			{"tasks that are descriptions", "x/skills/describe", `{"id":"echo","tasks":["write the report"]}`, `"description":"Echo."`},
		} {
			if got := call(version, c.method, c.params); !strings.Contains(got, c.want) {
				t.Errorf("%q %s: answered %s, want %q", version, c.name, got, c.want)
			}
		}
	}
	if agent.sawExtension(A) || agent.sawExtension(CA) {
		t.Errorf("the agent got an extension method naming alice's task or conversation from bob: %q", agent.seen)
	}
}

// TestAttackExtensionListLeaksOthersTasks: a list under another name
// than ListTasks (an extension's, which the operator lets through with
// AllowUnknownMethods) went to the client as the agent wrote it: bob read
// alice's task, its history and status message, from an a2a-go agent's
// store. Every array of tasks in an unknown method's answer is cut to
// the caller's, and an answer that is one of another's tasks is refused.
func TestAttackExtensionListLeaksOthersTasks(t *testing.T) {
	agent := newExtensionAgent(t)
	gw := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true})
	rpc := gw.URL + "/a2a/stub"
	if _, _, err := say(t, a2aGoClient(t, gw.URL, "bob"), "", "bob-note"); err != nil {
		t.Fatal(err)
	}
	alice, _, err := say(t, a2aGoClient(t, gw.URL, "alice"), "", "alice-secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"", "1.0"} {
		for _, method := range []string{"x/tasks/all", "x/tasks/allBare"} {
			got := do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`)
			if strings.Contains(got, "alice-secret") || strings.Contains(got, string(alice.ID)) {
				t.Errorf("%q %s: bob got alice's task: %s", version, method, got)
			}
			if !strings.Contains(got, "bob-note") {
				t.Errorf("%q %s: bob's own task was cut: %s", version, method, got)
			}
			mine := do(t, "POST", rpc, "alice", version, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`)
			if !strings.Contains(mine, "alice-secret") || strings.Contains(mine, "bob-note") {
				t.Errorf("%q %s: alice's list: %s", version, method, mine)
			}
		}
		// Streamed: bob's task passes, and the stream ends at alice's.
		got := do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"x/tasks/watchAll","params":{}}`)
		if strings.Contains(got, "alice-secret") || !strings.Contains(got, "bob-note") || !strings.Contains(got, "another's task") {
			t.Errorf("%q: bob's stream of every task: %s", version, got)
		}
		// The latest task is alice's: not bob's to read.
		got = do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"x/tasks/latest","params":{}}`)
		if strings.Contains(got, "alice-secret") || !strings.Contains(got, `"error"`) {
			t.Errorf("%q: bob read alice's task as an extension's answer: %s", version, got)
		}
		got = do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"x/tasks/latestBare","params":{}}`)
		if strings.Contains(got, "alice-secret") || !strings.Contains(got, `"error"`) {
			t.Errorf("%q: bob read alice's task, without its status, as an extension's answer: %s", version, got)
		}
		for _, method := range []string{"x/tasks/latest", "x/tasks/latestBare"} {
			if got := do(t, "POST", rpc, "alice", version, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`); !strings.Contains(got, "alice-secret") {
				t.Errorf("%q %s: alice's own latest task: %s", version, method, got)
			}
		}
		// An extension's own items pass whole.
		if got := do(t, "POST", rpc, "bob", version, `{"jsonrpc":"2.0","id":1,"method":"x/jobs","params":{}}`); !strings.Contains(got, `{"count":1,"items":[{"id":"job-1","status":"ok"}]}`) {
			t.Errorf("%q: an extension's own items: %s", version, got)
		}
	}
}

// TestExtensionOwnersAcrossReplicas: with agent_tasks.redis_url, the
// replica bob calls through knows alice's task only from the shared
// store: an extension method naming it, or listing it, is refused and cut
// there too; and with the store down, an id the replica does not know is
// refused (fail closed, "try again"), and a list keeps only the tasks it
// knows as the caller's.
func TestExtensionOwnersAcrossReplicas(t *testing.T) {
	agent := newExtensionAgent(t)
	store := &mapTasks{m: map[string]string{}}
	gw1 := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true, Tasks: store})
	gw2 := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true, Tasks: store})
	alice, _, err := say(t, a2aGoClient(t, gw1.URL, "alice"), "", "alice-secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := say(t, a2aGoClient(t, gw2.URL, "bob"), "", "bob-note"); err != nil {
		t.Fatal(err)
	}
	call := func(method, params string) string {
		return do(t, "POST", gw2.URL+"/a2a/stub", "bob", "", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	}
	if got := call("x/tasks/batchGet", `{"taskIds":["`+string(alice.ID)+`"]}`); !strings.Contains(got, "task not found") {
		t.Errorf("alice's task named through the other replica: %s", got)
	}
	if got := call("x/contexts/tasks", `{"filter":{"contextId":"`+alice.ContextID+`"}}`); !strings.Contains(got, "context not found") {
		t.Errorf("alice's conversation named through the other replica: %s", got)
	}
	if got := call("x/tasks/all", `{}`); strings.Contains(got, "alice-secret") || !strings.Contains(got, "bob-note") {
		t.Errorf("a list through the other replica: %s", got)
	}
	if got := call("x/skills/describe", `{"id":"echo"}`); !strings.Contains(got, "Echo.") {
		t.Errorf("a skill's id: %s", got)
	}
	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	if got := call("x/skills/describe", `{"id":"echo"}`); !strings.Contains(got, "did not answer") {
		t.Errorf("an id no one is known to own, the store down: %s", got)
	}
	if got := call("x/tasks/all", `{}`); strings.Contains(got, "alice-secret") || !strings.Contains(got, "bob-note") {
		t.Errorf("a list, the store down: %s", got)
	}
}

// TestAttackExtensionDeepNesting: an unknown method's params, and its
// answer, were read at any depth, each level re-reading all under it (a
// request of 4 MiB nested some thousands deep, before any decision, cost
// the gateway tens of seconds of CPU; as much an agent's answer). Past
// maxWalkDepth levels the params are refused as invalid, and the answer
// is not passed on; an extension's documents nested less pass.
func TestAttackExtensionDeepNesting(t *testing.T) {
	agent := newExtensionAgent(t)
	gw := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true})
	rpc := gw.URL + "/a2a/stub"
	nest := func(depth int, leaf string) string {
		return strings.Repeat(`{"a":[`, depth/2) + leaf + strings.Repeat(`]}`, depth/2)
	}
	call := func(method, params string) string {
		return do(t, "POST", rpc, "bob", "", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	}
	if got := call("x/skills/describe", `{"id":"echo","doc":`+nest(2*maxWalkDepth, `"deep-marker"`)+`}`); !strings.Contains(got, "-32602") || !strings.Contains(got, "levels") {
		t.Errorf("params nested past the bound: %s", got)
	}
	if agent.sawExtension("deep-marker") {
		t.Error("the agent got params nested past the bound")
	}
	if got := call("x/skills/describe", `{"id":"echo","doc":`+nest(maxWalkDepth/2, `"shallow-marker"`)+`}`); !strings.Contains(got, `"description":"Echo."`) {
		t.Errorf("params nested %d levels: %s", maxWalkDepth/2, got)
	}
	if got := call("x/tree", fmt.Sprintf(`{"depth":%d}`, 2*maxWalkDepth)); strings.Contains(got, "leaf") || !strings.Contains(got, "levels") {
		t.Errorf("an answer nested past the bound: %s", got)
	}
	if got := call("x/tree", fmt.Sprintf(`{"depth":%d}`, maxWalkDepth/2)); !strings.Contains(got, "leaf") {
		t.Errorf("an answer nested %d levels: %s", maxWalkDepth/2, got)
	}
}

// TestAttackExtensionNumericTaskID: an agent whose task ids are numbers
// spelt as strings ("7") read a task object's id 7 as "7", as JSON-RPC
// readers coerce (JavaScript's keys, Python's str); namedIDs took only a
// string for an id, so bob named alice's task 7 as {"task": {"id": 7}}.
// An integer where an id is read is that id spelt so, in params and in
// the answer; an extension's own numeric ids pass.
func TestAttackExtensionNumericTaskID(t *testing.T) {
	var peeked atomic.Int32
	agent := jsonRPCAgent(t, func(w http.ResponseWriter, method string, id jsontext.Value) {
		w.Header().Set("Content-Type", "application/json")
		if method == "message/send" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"kind":"task","id":"7","contextId":"c-7","status":{"state":"completed"}}}`)
			return
		}
		if method == "x/tasks/list" { // alice's task, its id a number
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"items":[{"kind":"task","id":7,"note":"alice-secret"},{"taskId":7,"note":"alice-secret"}]}}`)
			return
		}
		peeked.Add(1)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"title":"alice-secret"}}`)
	})
	gw := serveAs(t, allow, agent.URL, Options{AllowUnknownMethods: true})
	rpc := gw.URL + "/a2a/stub"
	if got := do(t, "POST", rpc, "alice", "", sendHi); !strings.Contains(got, `"id":"7"`) {
		t.Fatalf("alice's task: %s", got)
	}
	for _, params := range []string{`{"task":{"id":7}}`, `{"items":[{"kind":"task","id":7}]}`, `{"tasks":[7]}`, `{"contexts":[{"id":7}]}`} {
		if got := do(t, "POST", rpc, "bob", "", `{"jsonrpc":"2.0","id":1,"method":"x/tasks/peek","params":`+params+`}`); !strings.Contains(got, "task not found") {
			t.Errorf("bob naming alice's task 7 as %s: %s", params, got)
		}
	}
	if n := peeked.Load(); n != 0 {
		t.Errorf("the agent was asked %d times for alice's task by bob", n)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"x/tasks/list","params":{}}`
	if got := do(t, "POST", rpc, "bob", "", list); strings.Contains(got, "alice-secret") {
		t.Errorf("bob listed alice's task 7: %s", got)
	}
	if got := do(t, "POST", rpc, "alice", "", list); strings.Count(got, "alice-secret") != 2 {
		t.Errorf("alice's own list: %s", got)
	}
	var rows []string
	for i := range 2 * maxNamedIDs {
		rows = append(rows, fmt.Sprintf(`{"id":%d}`, i))
	}
	for _, params := range []string{`{"task":{"id":8}}`, `{"task":{"id":7.5}}`, `{"tasks":3}`, `{"rows":[` + strings.Join(rows, ",") + `]}`} {
		if got := do(t, "POST", rpc, "bob", "", `{"jsonrpc":"2.0","id":1,"method":"x/todo/get","params":`+params+`}`); !strings.Contains(got, "alice-secret") {
			t.Errorf("an extension's own numeric id %s: %s", params, got)
		}
	}
}

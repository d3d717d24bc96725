package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// MCP tasks through a virtual server. A task lives on the upstream whose
// tools/call created it, and each upstream's task ids are its own: two
// may hand out the same one, and a hostile one may hand out another's.
// So the client is given every task id as "{upstream}/{id}": the virtual
// server puts the upstream's name in front of each id an upstream sends
// (a task handle, tasks/get and tasks/list answers, notifications/tasks/status,
// a related-task _meta), and takes a tasks/get, tasks/result, tasks/cancel
// or tasks/update to the upstream its id names, with that upstream's own
// id. Upstream names cannot hold '/', so the first '/' ends the name and
// whatever an upstream's id holds (another upstream's name and id among
// it) stays that upstream's. An id that names no upstream of this virtual
// server is "task not found".
//
// A name in the id rather than a table of ids: any replica and any
// session can route it, there is nothing to bound or forget, and no id
// can be ambiguous. Who may use a task is still decided where it was
// recorded: the upstream's own route in this gateway, through which the
// task-augmented call and every tasks/* request go with the agent's
// identity, records each task as its creator's (principal, else agent),
// answers anyone else "task not found", keeps only the caller's tasks in
// a tasks/list answer and withholds another's notifications/tasks/status.

// relatedTaskMeta is the _meta member by which a message says which task
// it belongs to.
const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// taskNotFound is the answer to a task request naming a task the virtual
// server cannot take anywhere, as a route answers one that is not the
// caller's.
var taskNotFound = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "task not found"}

// splitTaskID returns the upstream a client's task id names and the id
// that upstream gave the task.
func (a *aggregator) splitTaskID(id string) (upstream, own string, ok bool) {
	upstream, own, ok = strings.Cut(id, "/")
	if !ok || own == "" || !slices.Contains(a.vs.Upstreams, upstream) {
		return "", "", false
	}
	return upstream, own, true
}

// task sends a tasks/get, tasks/result, tasks/cancel or tasks/update to
// the upstream its task id names, under the id that upstream gave it.
func (a *aggregator) task(r *http.Request, s *aggSession, req rpcRequest) (jsontext.Value, error) {
	if why, bad := intercept.CaseVariant(req.Params, []string{"taskId"}); bad {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + why}
	}
	id := intercept.Member(req.Params, "taskId")
	if id.Kind() != '"' {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + req.Method + " needs params.taskId, a string"}
	}
	u, own, ok := a.splitTaskID(intercept.StringMember(req.Params, "taskId"))
	if !ok {
		return nil, taskNotFound
	}
	q, _ := json.Marshal(own)
	params, err := intercept.WithMember(req.Params, "taskId", q)
	if err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	res, err := a.innerCall(r, s, u, req.Method, params)
	if _, ok := errors.AsType[*routeError](err); ok {
		return nil, err
	}
	if err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: "upstream " + u + ": " + err.Error()}
	}
	return taskIDsOut(u, res), nil
}

// taskIDsOut returns v, a result or a notification's params from
// upstream, with every task id it holds as the client knows it: its
// taskId (a task, a 2026-07-28 task handle, a task notification), its
// task's (a 2025-11-25 task handle), each of its tasks' (tasks/list) and
// its related task's.
func taskIDsOut(upstream string, v jsontext.Value) jsontext.Value {
	if v.Kind() != '{' || !bytes.Contains(v, taskIDMember) {
		return v
	}
	v = withTaskID(upstream, v)
	if t := intercept.Member(v, "task"); t.Kind() == '{' {
		v = withMember(v, "task", withTaskID(upstream, t))
	}
	if list := intercept.Member(v, "tasks"); list.Kind() == '[' {
		var out []jsontext.Value
		if intercept.EachElement(list, func(_ int, t jsontext.Value) error {
			out = append(out, withTaskID(upstream, t))
			return nil
		}) == nil && out != nil {
			v = withMember(v, "tasks", marshalArray(out))
		}
	}
	return relatedTaskOut(upstream, v)
}

// relatedTaskOut returns v, the params of a message from upstream, with
// its related task's id (in _meta) as the client knows it.
func relatedTaskOut(upstream string, v jsontext.Value) jsontext.Value {
	meta := intercept.Member(v, "_meta")
	if rel := intercept.Member(meta, relatedTaskMeta); rel.Kind() == '{' {
		v = withMember(v, "_meta", withMember(meta, relatedTaskMeta, withTaskID(upstream, rel)))
	}
	return v
}

// withTaskID returns the object v with its taskId, if a string, as
// "{upstream}/{taskId}".
func withTaskID(upstream string, v jsontext.Value) jsontext.Value {
	id := intercept.Member(v, "taskId")
	if id.Kind() != '"' {
		return v // none, or not an id anyone can name (a route answers it "task not found")
	}
	q, err := json.Marshal(upstream + "/" + intercept.StringMember(v, "taskId"))
	if err != nil {
		return v
	}
	return withMember(v, "taskId", q)
}

// withMember is intercept.WithMember, keeping obj when it is not an object.
func withMember(obj jsontext.Value, key string, val jsontext.Value) jsontext.Value {
	out, err := intercept.WithMember(obj, key, val)
	if err != nil {
		return obj
	}
	return out
}

// taskMessageOut returns msg, a notification or a request from upstream
// to the client, with the task ids it holds as the client knows them: a
// notification's (notifications/tasks/status carries the task), a
// request's related task (a request's own taskId names a task the client
// runs, not one of the upstream's).
func taskMessageOut(upstream string, msg []byte) []byte {
	if !bytes.Contains(msg, taskIDMember) {
		return msg
	}
	params := intercept.Member(msg, "params")
	if params.Kind() != '{' {
		return msg
	}
	if intercept.Member(msg, "id") != nil {
		params = relatedTaskOut(upstream, params)
	} else {
		params = taskIDsOut(upstream, params)
	}
	return withMember(msg, "params", params)
}

// upstreamCaps is what the virtual server knows of an upstream's tasks
// capability.
type upstreamCaps struct {
	tasks    jsontext.Value // its capabilities.tasks; nil: it declares none
	answered bool           // it has answered initialize or server/discover
	probed   time.Time      // when initialize last tried to learn it
}

// noteCaps records the capabilities upstream declared (in an initialize
// or server/discover answer).
func (a *aggregator) noteCaps(upstream string, caps jsontext.Value) {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	if a.caps == nil {
		a.caps = map[string]upstreamCaps{}
	}
	tasks := intercept.Member(caps, "tasks")
	if tasks.Kind() != '{' {
		tasks = nil
	}
	a.caps[upstream] = upstreamCaps{tasks: bytes.Clone(tasks), answered: true}
}

// learnCaps opens the inner sessions of s (in parallel, each bounded by
// listTimeout) on the upstreams whose capabilities the virtual server has
// not learnt yet, so that its initialize answer can say whether it offers
// tasks. An upstream that does not answer is tried again by an initialize
// at most once per eraTTL: one that is down or stalled must not hold up
// every session's initialize.
func (a *aggregator) learnCaps(r *http.Request, s *aggSession) {
	var todo []string
	a.capsMu.Lock()
	for _, u := range a.vs.Upstreams {
		if c := a.caps[u]; !c.answered && time.Since(c.probed) >= eraTTL {
			c.probed = time.Now()
			if a.caps == nil {
				a.caps = map[string]upstreamCaps{}
			}
			a.caps[u] = c
			todo = append(todo, u)
		}
	}
	a.capsMu.Unlock()
	var wg sync.WaitGroup
	for _, u := range todo {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), a.listTimeout)
			defer cancel()
			_, _ = a.inner(r.WithContext(ctx), s, u) // its answer is noted there
		})
	}
	wg.Wait()
}

// listsTasks reports whether upstream may answer tasks/list: it declares
// tasks with list, or has not said what it declares.
func (a *aggregator) listsTasks(upstream string) bool {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	c := a.caps[upstream]
	return !c.answered || intercept.Member(c.tasks, "list") != nil
}

// tasksCapability is the tasks capability the virtual server declares:
// list, cancel and task-augmented tools/call, each if some upstream
// declares it; nil when no upstream declares tasks.
func (a *aggregator) tasksCapability() map[string]any {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	var out map[string]any
	for _, u := range a.vs.Upstreams {
		t := a.caps[u].tasks
		if t == nil {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		for _, m := range []string{"list", "cancel"} {
			if intercept.Member(t, m) != nil {
				out[m] = map[string]any{}
			}
		}
		if intercept.Member(intercept.Member(intercept.Member(t, "requests"), "tools"), "call") != nil {
			out["requests"] = map[string]any{"tools": map[string]any{"call": map[string]any{}}}
		}
	}
	return out
}

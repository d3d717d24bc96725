package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	if rel := relatedTaskOf(r); rel != nil && rel.upstream != u {
		return nil, errRelatedUpstream(rel, u)
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
	if v.Kind() != '{' || !mayHoldMember(v, taskIDMember) {
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
	if !mayHoldMember(msg, taskIDMember) {
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
	tasksExt bool           // it declares the 2026-07-28 tasks extension (capabilities.extensions)
	logging  bool           // it declares logging
	answered bool           // it has answered initialize or server/discover
	probed   time.Time      // when initialize last tried to learn it
	// subscribe: it declares resource subscriptions
	subscribe bool
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
	ext := intercept.Member(intercept.Member(caps, "extensions"), tasksExtension)
	a.caps[upstream] = upstreamCaps{tasks: bytes.Clone(tasks), tasksExt: ext.Kind() == '{', logging: intercept.Member(caps, "logging").Kind() == '{', answered: true,
		subscribe: string(intercept.Member(intercept.Member(caps, "resources"), "subscribe")) == "true"}
}

// subscribes reports whether an upstream declares resource subscriptions.
func (a *aggregator) subscribes() bool {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	for _, c := range a.caps {
		if c.subscribe {
			return true
		}
	}
	return false
}

// logs reports whether upstream declares logging.
func (a *aggregator) logs(upstream string) bool {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	return a.caps[upstream].logging
}

// loggingCapability is the logging capability the virtual server
// declares: the one MCP gives a server that sends log messages, when an
// upstream declares it (its log messages reach the client); nil when
// none does, and then logging/setLevel is not offered.
func (a *aggregator) loggingCapability() map[string]any {
	for _, u := range a.vs.Upstreams {
		if a.logs(u) {
			return map[string]any{}
		}
	}
	return nil
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

// tasksExtension is the 2026-07-28 tasks extension, which a server
// declares in capabilities.extensions (with no settings defined yet: an
// empty object).
const tasksExtension = "io.modelcontextprotocol/tasks"

// extensionsCapability is the capabilities.extensions the virtual server
// declares: the tasks extension if some upstream declares it; nil when
// none does.
func (a *aggregator) extensionsCapability() map[string]any {
	a.capsMu.Lock()
	defer a.capsMu.Unlock()
	for _, u := range a.vs.Upstreams {
		if a.caps[u].tasksExt {
			return map[string]any{tasksExtension: map[string]any{}}
		}
	}
	return nil
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

// A client names a task in a message of its own too: a related-task _meta
// (an elicitation or sampling answer, a request) says which task the
// message belongs to, by the id the client was shown. The upstream never
// issued that id: each inner message carries the upstream's own id
// instead, to the upstream the id names only (another upstream is sent
// the message without it). A related task the client may not name (not
// "{upstream}/{id}" of this virtual server, or a task that is not the
// client's as that upstream's route records it) is refused and nothing is
// forwarded. The related task of an answer to a request naming a task
// the client runs (an upstream's tasks/* to the client, a task-augmented
// request) is the client's own, and stays as it is.

// relatedTask is a client's related task: the upstream whose task it is
// and the id that upstream gave it.
type relatedTask struct{ upstream, own string }

// relatedTaskKey holds, in an inner request's context, the related task
// of the client's message it carries (*relatedTask).
type relatedTaskKey struct{}

// errRelatedTask answers a client's message whose related task it may
// not name.
func errRelatedTask(id string) error {
	return &intercept.WireError{Code: intercept.CodeInvalidParams,
		Message: fmt.Sprintf("related task %q not found: _meta[%q].taskId must be one of your tasks as this server named it ({upstream}/{id})", id, relatedTaskMeta)}
}

// errRelatedUpstream answers a request that goes to upstream but names a
// related task of another: no upstream can read the other's id, and its
// own would say another task.
func errRelatedUpstream(rel *relatedTask, upstream string) error {
	return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
		"related task %q is a task of upstream %q; this request goes to %q", rel.upstream+"/"+rel.own, rel.upstream, upstream)}
}

// relatedTaskIn returns the related task meta (a client message's _meta)
// names, nil for none, or why the client may not name it. msgs are the
// message, for the identity its upstream's route sees.
func (a *aggregator) relatedTaskIn(r *http.Request, s *aggSession, meta jsontext.Value, msgs []*intercept.Message) (*relatedTask, error) {
	rel := intercept.Member(meta, relatedTaskMeta)
	if rel == nil {
		return nil, nil
	}
	if why, bad := intercept.CaseVariant(rel, []string{"taskId"}); bad {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: related task: " + why}
	}
	if rel.Kind() != '{' || intercept.Member(rel, "taskId").Kind() != '"' {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: _meta[%q] needs a taskId, a string", relatedTaskMeta)}
	}
	id := intercept.StringMember(rel, "taskId")
	u, own, ok := a.splitTaskID(id)
	if !ok {
		return nil, errRelatedTask(id)
	}
	in, err := a.inner(r, s, u)
	if err != nil {
		if _, ok := errors.AsType[*routeError](err); ok {
			return nil, err
		}
		return nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: "upstream " + u + ": " + err.Error()}
	}
	if !a.ownsTask(r, s, u, in, own, msgs) {
		return nil, errRelatedTask(id)
	}
	return &relatedTask{upstream: u, own: own}, nil
}

// ownsTask reports whether the client of r owns task id of upstream as
// that upstream's route decides it for an inner request in session in:
// with the call context (principal, agent, task scope) the route gives
// that request (exchange.callContext).
func (a *aggregator) ownsTask(r *http.Request, s *aggSession, upstream string, in *innerSession, id string, msgs []*intercept.Message) bool {
	rt := a.g.routes[upstream]
	if rt == nil {
		return false
	}
	x := &exchange{rt: rt, principal: intercept.PrincipalFrom(r.Context()), virtual: s.id}
	if in.id != "" {
		x.sess = a.g.sessions.get(in.id, upstream)
	}
	if x.sess != nil {
		x.owner = x.sess.owner
	} else {
		c, err := a.g.ident.identify(r, msgs)
		if err != nil {
			return false
		}
		x.owner = c.principal()
	}
	x.agent, x.clientName = x.owner.agent, x.owner.clientName()
	return a.g.ic.OwnsTask(r.Context(), x.callContext(), id)
}

// relatedTaskFor returns v, params (or a result) bound for upstream, with
// its related task as upstream knows it: rel's own id on rel's upstream;
// on any other, which never issued it, without one.
func relatedTaskFor(v jsontext.Value, rel *relatedTask, upstream string) jsontext.Value {
	meta := intercept.Member(v, "_meta")
	if rel == nil || intercept.Member(meta, relatedTaskMeta) == nil {
		return v
	}
	if upstream != rel.upstream {
		m, err := intercept.WithoutMember(meta, relatedTaskMeta)
		if err != nil {
			return v
		}
		return withMember(v, "_meta", m)
	}
	q, _ := json.Marshal(rel.own)
	rt := withMember(intercept.Member(meta, relatedTaskMeta), "taskId", q)
	return withMember(v, "_meta", withMember(meta, relatedTaskMeta, rt))
}

// relatedTaskOf is the related task of the client's message r carries.
func relatedTaskOf(r *http.Request) *relatedTask {
	rel, _ := r.Context().Value(relatedTaskKey{}).(*relatedTask)
	return rel
}

// withRelatedTask returns r carrying rel, if any.
func withRelatedTask(r *http.Request, rel *relatedTask) *http.Request {
	if rel == nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), relatedTaskKey{}, rel))
}

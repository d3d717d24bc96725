package intercept

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/ownership"
)

// MCP tasks (2025-11-25's tasks/*, 2026-07-28's io.modelcontextprotocol/tasks
// extension): a request may be answered with a task handle, and the task's
// result is read later by its id. The upstream sees Sluice's credentials,
// not the agent's, so it cannot keep one agent's tasks from another: the
// gateway binds each task to the agent whose request created it, and
// answers a request naming a task that is not the caller's (or one it never
// saw created) with "task not found", as the specification has a receiver
// answer a task outside the requestor's authorization context.

// maxTasks is how many task owners an Interceptor remembers; past it the
// oldest are forgotten (and their tasks are "not found").
const maxTasks = 100_000

// TaskMethod reports whether method names a task by params.taskId.
func TaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/update":
		return true
	}
	return false
}

func (i *Interceptor) taskTable() *ownership.Table {
	i.tasksOnce.Do(func() { i.tasks = ownership.New(maxTasks) })
	return i.tasks
}

// taskOwner is who a task created for, or asked about by, the client of
// cc belongs to: the authenticated principal, else the agent.
func taskOwner(ctx context.Context, cc CallContext) string {
	if p := principalOf(ctx, cc); p != nil {
		return "p\x00" + p.ID
	}
	return "a\x00" + cc.Agent
}

// taskKey names task id of cc's upstream, within its TaskScope.
func taskKey(cc CallContext, id string) string {
	return cc.Upstream + "\x00" + cc.TaskScope + "\x00" + id
}

// TaskHandle returns the id of the task result creates, if it is a task
// handle: 2025-11-25's {"task": {"taskId": …}} or 2026-07-28's
// {"resultType": "task", "taskId": …}.
func TaskHandle(result jsontext.Value) string {
	if result.Kind() != '{' {
		return ""
	}
	if t := Member(result, "task"); t.Kind() == '{' {
		if id := StringMember(t, "taskId"); id != "" {
			return id
		}
	}
	if StringMember(result, "resultType") == "task" {
		return StringMember(result, "taskId")
	}
	return ""
}

// ObserveTask records the task result creates, if it is a task handle
// answering a request of the client of cc, as that client's: record it
// before the client has the answer, so that its first tasks/get finds it.
// A task already recorded keeps its first owner.
func (i *Interceptor) ObserveTask(ctx context.Context, cc CallContext, result jsontext.Value) {
	if id := TaskHandle(result); id != "" {
		i.taskTable().ContainsOrAdd(taskKey(cc, id), taskOwner(ctx, cc))
	}
}

// OwnsTask reports whether the client of cc owns the task id on its
// upstream.
func (i *Interceptor) OwnsTask(ctx context.Context, cc CallContext, id string) bool {
	_, owns := i.taskTable().Owns(taskKey(cc, id), taskOwner(ctx, cc))
	return owns
}

// checkTask answers a tasks/* request m that names a task the client of
// cc does not own, or names it in a way an upstream could read otherwise
// (a case variant of taskId, which Go servers accept); nil lets it go on.
func (i *Interceptor) checkTask(ctx context.Context, m *Message, cc CallContext) []byte {
	if why, bad := CaseVariant(m.Params, []string{"taskId"}); bad {
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "invalid params: " + why})
	}
	id := Member(m.Params, "taskId")
	var s string
	if id.Kind() == '"' {
		s = StringMember(m.Params, "taskId")
	}
	if s == "" {
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "invalid params: " + m.Method + " needs params.taskId, a string"})
	}
	if !i.OwnsTask(ctx, cc, s) {
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "task not found"})
	}
	return nil
}

// FilterTasksResult returns result, a tasks/list result, holding only the
// tasks the client of cc owns; changed reports whether any was removed.
func (i *Interceptor) FilterTasksResult(ctx context.Context, cc CallContext, result jsontext.Value) (out jsontext.Value, changed bool) {
	tasks := Member(result, "tasks")
	if tasks.Kind() != '[' {
		return result, false
	}
	var kept []byte
	kept = append(kept, '[')
	n := 0
	err := EachElement(tasks, func(_ int, t jsontext.Value) error {
		if id := StringMember(t, "taskId"); id == "" || !i.OwnsTask(ctx, cc, id) {
			changed = true
			return nil
		}
		if n > 0 {
			kept = append(kept, ',')
		}
		n++
		kept = append(kept, t...)
		return nil
	})
	if err != nil {
		// Unreadable: hold none of it back unread.
		out, _ = WithMember(result, "tasks", jsontext.Value("[]"))
		return out, true
	}
	if !changed {
		return result, false
	}
	kept = append(kept, ']')
	out, err = WithMember(result, "tasks", jsontext.Value(kept))
	if err != nil {
		out, _ = WithMember(result, "tasks", jsontext.Value("[]"))
	}
	return out, true
}

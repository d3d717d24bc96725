package intercept

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

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

// TaskStore keeps task owners where every replica sees them (Redis); the
// Interceptor also keeps them in the process. A store that cannot answer
// makes the task "not found" for that request (fail closed).
type TaskStore interface {
	// Claim records owner for key unless the key has an owner already,
	// and returns the key's owner (the first to claim it).
	Claim(ctx context.Context, key, owner string) (string, error)
	// Owner returns the key's owner and whether it has one.
	Owner(ctx context.Context, key string) (owner string, ok bool, err error)
}

// sharedTaskKey is the key of an MCP task in the shared store: it starts
// with a NUL, which no A2A agent's name (the start of an A2A task's key in
// the same store) does. A key longer than maxSharedTaskKey (a session id
// carrying a client's long name scopes it) is its SHA-256: the store keeps
// it for agent_tasks.ttl, a week (TestAttackLongNamesBoundTaskRecords).
func sharedTaskKey(key string) string {
	if len(key) > maxSharedTaskKey {
		return "\x00mcp-h\x00" + digest(key)
	}
	return "\x00mcp\x00" + key
}

// Bounds of what a task's record holds as it is (sharedTaskKey,
// taskOwner): no session id another replica opens (at most 4 KiB), nor a
// real agent's name, comes near them.
const (
	maxSharedTaskKey = 8 << 10
	maxOwnerName     = 1 << 10
)

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// maxStoreLookups bounds how many owners one tasks/list answer may look
// up in the shared store; tasks past it that this process has not seen
// are held back, as tasks whose owner is unknown, and so are those after
// a lookup that failed.
const maxStoreLookups = 256

// maxTasks is how many task owners an Interceptor remembers; past it the
// oldest are forgotten (and their tasks are "not found"). One owner holds
// at most maxTasksPerOwner of them, its own oldest forgotten past that:
// an agent starting tasks without end pushes out only its own.
const (
	maxTasks         = 100_000
	maxTasksPerOwner = maxTasks / 10
)

// TaskMethod reports whether method names a task by params.taskId.
func TaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/update":
		return true
	}
	return false
}

func (i *Interceptor) taskTable() *ownership.Table {
	i.tasksOnce.Do(i.initTasks)
	return i.tasks
}

func (i *Interceptor) initTasks() {
	i.tasks, i.unclaimed = ownership.NewShared(maxTasks, maxTasksPerOwner), ownership.NewUnclaimed(maxUnclaimed, maxUnclaimed/10)
}

// taskOwner is who a task created for, or asked about by, the client of
// cc belongs to: the authenticated principal, else the agent. An agent's
// name is the client's, as long as a request: past maxOwnerName it is
// its SHA-256 ("h"), which the shared store keeps for a week rather than
// the name (TestAttackLongNamesBoundTaskRecords).
func taskOwner(ctx context.Context, cc CallContext) string {
	if p := principalOf(ctx, cc); p != nil {
		return "p\x00" + p.ID
	}
	if len(cc.Agent) > maxOwnerName {
		return "h\x00" + digest(cc.Agent)
	}
	return "a\x00" + cc.Agent
}

// shareOf is whose share of a bounded table (ownership.NewShared) a
// record made for the client of cc counts against, where the table binds
// the owner in the key (cursors, requestStates) or keeps it apart from
// the share (tasks: ownership.Table.ContainsOrAddIn): the principal when authenticated; else the client's
// address when it has one, since an unauthenticated agent is the name
// the client gives, which it may change at each call, and a client
// renaming itself every share would fill the table and push out every
// other client's records; else the agent (stdio: one client).
func shareOf(ctx context.Context, cc CallContext) string {
	if p := principalOf(ctx, cc); p != nil {
		return "p\x00" + p.ID
	}
	if a := ClientAddrFrom(ctx); a != "" {
		return "c\x00" + a
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
	id := TaskHandle(result)
	if id == "" {
		return
	}
	key, owner := taskKey(cc, id), taskOwner(ctx, cc)
	if i.shares(cc) {
		// The store decides who was first, across replicas (claimed
		// again when known here: the store may have lost it).
		first, err := i.Tasks.Claim(context.WithoutCancel(ctx), sharedTaskKey(key), owner)
		if err != nil {
			// Not recorded here either: the store may hold another's
			// (an upstream's handle naming another caller's task). Not
			// found until the store answers, then claimed (ownsTask).
			if known, _ := i.taskTable().Owns(key, ""); !known {
				i.unclaimedTasks().Keep(key, owner, shareOf(ctx, cc))
			}
			return
		}
		owner = first
	}
	i.taskTable().ContainsOrAddIn(key, owner, shareOf(ctx, cc))
}

// maxUnclaimed bounds the tasks kept to claim once the shared store
// answers again, a tenth of them one caller's (past it, its own oldest
// is forgotten); past the bound an arbitrary one is ("not found").
const maxUnclaimed = 4096

func (i *Interceptor) unclaimedTasks() *ownership.Unclaimed {
	i.tasksOnce.Do(i.initTasks)
	return i.unclaimed
}

// shares reports whether the tasks of cc's upstream are kept in the
// shared store: not those of an upstream process of one session's own,
// which no other replica can reach.
func (i *Interceptor) shares(cc CallContext) bool {
	return i.Tasks != nil && (cc.TaskScope == "" || cc.SharedTaskScope)
}

// OwnsTask reports whether the client of cc owns the task id on its
// upstream.
func (i *Interceptor) OwnsTask(ctx context.Context, cc CallContext, id string) bool {
	owns, _, _ := i.ownsTask(ctx, cc, id, true)
	return owns
}

// ownsTask is OwnsTask; lookup says the shared store may be asked about a
// task this process has not seen, asked whether it was, and failed that it
// did not answer.
func (i *Interceptor) ownsTask(ctx context.Context, cc CallContext, id string, lookup bool) (owns, asked, failed bool) {
	key, owner := taskKey(cc, id), taskOwner(ctx, cc)
	known, owns := i.taskTable().Owns(key, owner)
	if known || !lookup || !i.shares(cc) {
		return owns, false, false
	}
	got, ok, err := i.Tasks.Owner(ctx, sharedTaskKey(key))
	if err != nil {
		return false, true, true
	}
	share := got // someone else's: its owner's share
	if first, firstShare, kept := i.unclaimedTasks().Take(key); kept && !ok {
		// Seen here first while the store did not answer: claimed now.
		if got, err = i.Tasks.Claim(context.WithoutCancel(ctx), sharedTaskKey(key), first); err != nil {
			i.unclaimedTasks().Keep(key, first, firstShare)
			return false, true, true
		}
		ok, share = true, got
		if got == first {
			share = firstShare
		}
	}
	if !ok {
		return false, true, false
	}
	if got == owner {
		share = shareOf(ctx, cc)
	}
	i.taskTable().ContainsOrAddIn(key, got, share)
	return got == owner, true, false
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
	if owns, _, failed := i.ownsTask(ctx, cc, s, true); !owns {
		msg := "task not found"
		if failed {
			// The task may well be the caller's: to ask for again, not
			// to give up on.
			msg += " (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"
		}
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: msg})
	}
	return nil
}

// FilterTasksResult returns result, a tasks/list result, holding only the
// tasks the client of cc owns; changed reports whether any was removed.
//
// A result that spells tasks in another case ("Tasks", which Go clients
// read as tasks), or holds at any depth two members whose names differ
// only in case ("taskId" and "TaskId": the gateway reads the one, Go
// clients the last), is none of the client's to see: it is given an
// empty list alone. A task whose only id is "TaskId" is nobody's.
func (i *Interceptor) FilterTasksResult(ctx context.Context, cc CallContext, result jsontext.Value) (out jsontext.Value, changed bool) {
	if _, bad := CaseVariant(result, tasksName); bad && result.Kind() == '{' {
		return jsontext.Value(`{"tasks":[]}`), true
	}
	tasks := Member(result, "tasks")
	if tasks.Kind() != '[' {
		return result, false
	}
	var kept []byte
	kept = append(kept, '[')
	n, lookups := 0, 0
	err := EachElement(tasks, func(_ int, t jsontext.Value) error {
		id := StringMember(t, "taskId")
		owns := false
		if id != "" {
			var asked, failed bool
			owns, asked, failed = i.ownsTask(ctx, cc, id, lookups < maxStoreLookups)
			switch {
			case failed:
				// The store does not answer (down, or stalled: each
				// lookup waits out its timeout): the rest are held
				// back unasked rather than the answer held a timeout
				// per task.
				lookups = maxStoreLookups
			case asked:
				lookups++
			}
		}
		if !owns {
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

// relatedTask is the _meta member by which a message says which task it
// belongs to (2025-11-25).
const relatedTask = "io.modelcontextprotocol/related-task"

// NamedTask reports whether m, a message from an upstream to a client,
// is about one of the upstream's MCP tasks, and which: a notification's
// params.taskId (notifications/tasks/status carries the whole task), or
// the related task (params._meta["io.modelcontextprotocol/related-task"]
// .taskId) of a notification or request. A taskId that is not a string,
// or is spelled in another case beside or instead of taskId, names a task
// that is nobody's (id ""). A server's own tasks/* requests
// name a task the client runs, not one of the upstream's, and are not
// about one here.
func NamedTask(m *Message) (id string, named bool) {
	if m.Kind != KindNotification && m.Kind != KindRequest {
		return "", false
	}
	if m.Kind == KindNotification {
		if _, bad := CaseVariant(m.Params, taskIDName); bad {
			return "", true // "TaskId": a Go client reads it as taskId
		}
		if v := Member(m.Params, "taskId"); v != nil {
			return stringOf(v), true
		}
	}
	if rel := Member(m.Meta, relatedTask); rel != nil {
		if _, bad := CaseVariant(rel, taskIDName); bad {
			return "", true
		}
		return StringMember(rel, "taskId"), true
	}
	return "", false
}

// taskIDName is the member naming a task, for CaseVariant: Go's
// encoding/json, which mcp-go's and the go-sdk's clients read with, takes
// "TaskId" and "TASKID" for taskId (and of "taskId" and "TaskId" side by
// side the last), so a message naming its task so names one the exact
// name would not find. Such a task is nobody's.
var taskIDName = []string{"taskId"}

// tasksName is a tasks/list result's list, for CaseVariant.
var tasksName = []string{"tasks"}

// ForeignTask reports whether m, a message from cc's upstream to the
// client of cc, is about a task that client does not own (another's, or
// one Sluice never saw created): it must not reach that client, whose
// status and status message are another agent's.
func (i *Interceptor) ForeignTask(ctx context.Context, cc CallContext, m *Message) bool {
	id, named := NamedTask(m)
	return named && (id == "" || !i.OwnsTask(ctx, cc, id))
}

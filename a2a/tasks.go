package a2a

import (
	clist "container/list"
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/ownership"
)

// TaskStore keeps task owners where every replica sees them (Redis); the
// gateway also keeps them in the process. A store that cannot answer makes
// the task "not found" for that request (fail closed). It is the store MCP
// tasks use.
type TaskStore = intercept.TaskStore

// owners remembers which principal created each task, per agent.
type owners struct {
	c      *ownership.Table // agent + "\x00" + task id -> owner
	shared TaskStore        // nil: this process only
	// contexts holds the owners of conversations (contextKey) apart
	// from c: a context is refused once forgotten, and one conversation
	// of many tasks, anyone's, must not push others' contexts out
	// (their tasks' turns would then be refused). A context takes a slot
	// when a conversation starts, a task each turn.
	contexts *ownership.Table
	// inContext holds the conversation each task is in (taskContextKey
	// to the context id, as an owner): a message going on with a task is
	// decided in the task's conversation, and must name it.
	inContext *ownership.Table
	// contextOf holds the same, readable: the conversation a decided
	// follow-up naming the task is decided in.
	contextOf *ring
	log       *slog.Logger
	// rejected holds the tasks of the gateway's own soft denials, which
	// the agent never saw, apart from c: a flood of denied messages costs
	// the caller nothing, and must not push real tasks out of c (whose
	// owners would then be unknown, their tasks "not found").
	rejected *ownership.Table

	// unclaimed holds the owners of tasks the shared store did not take
	// (it did not answer), apart from c: the store may say another caller
	// created the task first (an agent's answer naming another's task),
	// so it is no one's here until the store answers, and then claimed
	// for whoever was first (ownsShared).
	unclaimed *ownership.Unclaimed
}

// maxUnclaimed bounds the tasks kept to claim once the shared store
// answers again, a tenth of them one caller's (past it, its own oldest
// is forgotten); past the bound an arbitrary one is ("not found").
const maxUnclaimed = 4096

func newOwners(n int, shared TaskStore, log *slog.Logger) *owners {
	// One principal holds at most a tenth of c and of contexts: one
	// starting tasks or conversations without end pushes out only its
	// own, never another's.
	share := max(1, n/10)
	return &owners{c: ownership.NewShared(n, share), contexts: ownership.NewShared(n, share), inContext: ownership.NewShared(n, share), contextOf: newRing(n, share), shared: shared, log: log, rejected: ownership.New(min(n, 1024)),
		unclaimed: ownership.NewUnclaimed(maxUnclaimed, maxUnclaimed/10)} // n > 0
}

// table is where task's owner is kept in the process: a context's
// (contextKey) in contexts, a task's in c.
func (o *owners) table(task string) *ownership.Table {
	if strings.HasPrefix(task, contextPrefix) {
		return o.contexts
	}
	return o.c
}

// addRejected records the owner of a task the gateway rejected itself.
func (o *owners) addRejected(agentName, task, owner string) {
	if task != "" {
		o.rejected.ContainsOrAdd(agentName+"\x00"+task, owner)
	}
}

// rejectedOnly reports whether task is one the gateway rejected itself
// (a soft denial) and the agent never created.
func (o *owners) rejectedOnly(agentName, task string) bool {
	key := agentName + "\x00" + task
	if known, _ := o.table(task).Owns(key, ""); known {
		return false
	}
	known, _ := o.rejected.Owns(key, "")
	return known
}

// add records owner for task, the first owner staying. share
// (callerShare) is whose tenth of unclaimed the record counts against
// while the shared store does not answer, and, for the owner of
// unauthenticated callers (""), of the owner table: that owner is every
// one of them, so their records count against each caller's address,
// not against no bound.
func (o *owners) add(ctx context.Context, agentName, task, owner, share string) {
	if task == "" {
		return
	}
	key := agentName + "\x00" + task
	if o.shared != nil {
		// The store decides who was first, across replicas (claimed
		// again when known here: the store may have lost it).
		first, err := o.shared.Claim(context.WithoutCancel(ctx), key, owner)
		if err != nil {
			if known, _ := o.table(task).Owns(key, ""); !known {
				o.log.Warn("a2a: task owner not recorded: the shared store did not answer; the task is \"not found\" until it answers again", "agent", agentName, "task", task, "err", err)
				o.unclaimed.Keep(key, owner, share)
			}
			return
		}
		owner = first
	}
	// The first owner stays. The unnamed owner's tasks count against
	// their caller's share: the unnamed owner has none of its own, and
	// one unauthenticated client starting tasks without end would push
	// out every other's.
	if principalOf(owner) != "" {
		share = owner
	}
	o.table(task).ContainsOrAddIn(key, owner, share)
}

// owns reports whether owner created the task. A task the gateway never
// saw created is no one's: not found.
func (o *owners) owns(ctx context.Context, agentName, task, owner string) bool {
	owns, _, _ := o.ownsAsking(ctx, agentName, task, owner, true)
	return owns
}

// notOwned is nil if owner created the task, else the refusal msg,
// saying so when the shared store did not answer: the task may well be
// the caller's, to ask for again, not one to give up on.
func (o *owners) notOwned(ctx context.Context, agentName, task, owner, msg string) *intercept.WireError {
	owns, _, failed := o.ownsAsking(ctx, agentName, task, owner, true)
	switch {
	case owns:
		return nil
	case failed:
		msg += " (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"
	}
	return &intercept.WireError{Code: codeTaskNotFound, Message: msg}
}

// ownsAsking is owns, asking the shared store only if ask; asked reports
// whether it did, failed that it did not answer.
func (o *owners) ownsAsking(ctx context.Context, agentName, task, owner string, ask bool) (owns, asked, failed bool) {
	key := agentName + "\x00" + task
	if known, owns := o.table(task).Owns(key, owner); known {
		return owns, false, false
	}
	if known, owns := o.rejected.Owns(key, owner); known {
		return owns, false, false
	}
	if o.shared == nil || !ask {
		return false, false, false
	}
	_, owns, failed = o.ownsShared(ctx, agentName, task, key, owner)
	return owns, true, failed
}

// ownsShared asks the shared store whose task is: known, whether it has
// an owner; owns, whether that is owner; failed, that the store did not
// answer.
func (o *owners) ownsShared(ctx context.Context, agentName, task, key, owner string) (known, owns, failed bool) {
	got, ok, err := o.shared.Owner(ctx, key)
	if err != nil {
		o.log.Warn("a2a: task owner unknown: the shared store did not answer", "agent", agentName, "task", task, "err", err)
		return false, false, true
	}
	if first, share, kept := o.unclaimed.Take(key); kept && !ok {
		// Seen here first while the store did not answer: claimed now.
		if got, err = o.shared.Claim(context.WithoutCancel(ctx), key, first); err != nil {
			o.unclaimed.Keep(key, first, share)
			o.log.Warn("a2a: task owner unknown: the shared store did not answer", "agent", agentName, "task", task, "err", err)
			return false, false, true
		}
		ok = true
	}
	if ok {
		o.table(task).ContainsOrAdd(key, got)
	}
	return ok, ok && got == owner, false
}

// record notes the tasks an answer (a result or a stream event's result)
// creates or names, in both versions' shapes.
// With seen (the events of one stream), an id recorded by an earlier
// event is not claimed again: each claim is a round trip to the shared
// store, which while it does not answer holds the event its timeout.
func (o *owners) record(ctx context.Context, agentName, owner string, result jsontext.Value, seen map[string]bool) {
	share := callerShare(ctx)
	add := func(task string) {
		if seen[task] {
			return
		}
		if seen != nil && len(seen) < maxSeenPerStream {
			seen[task] = true
		}
		o.add(ctx, agentName, task, owner, share)
	}
	for _, id := range taskIDs(result) {
		add(id)
	}
	contexts := contextIDs(result)
	for _, id := range contexts {
		add(contextKey(id))
	}
	// A result naming one task and one conversation: the task is in it.
	if task, context := only(taskIDs(result)), only(contexts); task != "" && context != "" && !seen[taskContextKey(task)] {
		if seen != nil && len(seen) < maxSeenPerStream {
			seen[taskContextKey(task)] = true
		}
		o.addInContext(ctx, agentName, task, context, owner, share)
	}
}

// only is the one distinct non-empty id of ids, or "".
func only(ids []string) string {
	one := ""
	for _, id := range ids {
		switch {
		case id == "" || id == one:
		case one == "":
			one = id
		default:
			return ""
		}
	}
	return one
}

// taskContextKey is the key under which the conversation a task is in
// is kept (as its owner).
func taskContextKey(task string) string { return taskContextPrefix + task }

const taskContextPrefix = "task-context\x00"

// addInContext records that task is in the conversation contextID, the
// first one recorded staying; like a task's owner, in the shared store
// too. The record counts against the caller's share (owner's, else
// share).
func (o *owners) addInContext(ctx context.Context, agentName, task, contextID, owner, share string) {
	key := agentName + "\x00" + taskContextKey(task)
	if o.shared != nil {
		first, err := o.shared.Claim(context.WithoutCancel(ctx), key, contextID)
		if err != nil {
			if known, _ := o.inContext.Owns(key, ""); !known {
				// Kept to claim once the store answers again, as the
				// task's owner is (sharedConversation): lost, the task
				// could never go on.
				o.log.Warn("a2a: the conversation of a task not recorded: the shared store did not answer; messages going on with the task are refused until it answers again", "agent", agentName, "task", task, "err", err)
				o.unclaimed.Keep(key, contextID, share)
			}
			return
		}
		contextID = first
	}
	if principalOf(owner) != "" {
		share = owner
	}
	o.inContext.ContainsOrAddIn(key, contextID, share)
	o.contextOf.addIfAbsent(key, contextID, share)
}

// conversationOf returns the conversation task is in, "" if the gateway
// does not know it; an error if the shared store did not answer.
func (o *owners) conversationOf(ctx context.Context, agentName, task string) (string, error) {
	key := agentName + "\x00" + taskContextKey(task)
	if c, ok := o.contextOf.get(key); ok {
		if known, in := o.inContext.Owns(key, c); !known || in {
			return c, nil
		}
	}
	if o.shared == nil {
		return "", nil
	}
	c, ok, err := o.sharedConversation(ctx, key)
	if err != nil || !ok {
		return "", err
	}
	return c, nil
}

// sharedConversation asks the shared store for the conversation of the
// task key names (taskContextKey); one recorded here while the store did
// not answer (unclaimed) is claimed now, the store's first staying.
func (o *owners) sharedConversation(ctx context.Context, key string) (string, bool, error) {
	got, ok, err := o.shared.Owner(ctx, key)
	if err != nil {
		return "", false, err
	}
	if first, share, kept := o.unclaimed.Take(key); kept && !ok {
		if got, err = o.shared.Claim(context.WithoutCancel(ctx), key, first); err != nil {
			o.unclaimed.Keep(key, first, share)
			return "", false, err
		}
		ok = true
	}
	return got, ok, nil
}

// ring is a map of at most n keys, forgetting the oldest first, of which
// one share (the caller's, as ownership.NewShared counts them) holds at
// most share: a caller adding keys past it forgets its own oldest, never
// another's. The unnamed share ("") has no bound of its own.
type ring struct {
	mu      sync.Mutex
	m       map[string]*ringEntry
	all     *clist.List            // every entry, oldest first
	byShare map[string]*clist.List // each share's entries, oldest first
	n       int
	share   int
}

type ringEntry struct {
	v, share  string
	all, mine *clist.Element
	k         string
}

func newRing(n, share int) *ring {
	return &ring{m: map[string]*ringEntry{}, all: clist.New(), byShare: map[string]*clist.List{}, n: max(1, n), share: max(1, share)}
}

func (r *ring) addIfAbsent(k, v, share string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[k]; ok {
		return
	}
	if l := r.byShare[share]; share != "" && l != nil && l.Len() >= r.share {
		r.remove(l.Front().Value.(*ringEntry))
	}
	if r.all.Len() >= r.n {
		r.remove(r.all.Front().Value.(*ringEntry))
	}
	e := &ringEntry{k: k, v: v, share: share}
	e.all = r.all.PushBack(e)
	if share != "" {
		l := r.byShare[share]
		if l == nil {
			l = clist.New()
			r.byShare[share] = l
		}
		e.mine = l.PushBack(e)
	}
	r.m[k] = e
}

func (r *ring) remove(e *ringEntry) {
	delete(r.m, e.k)
	r.all.Remove(e.all)
	if e.mine != nil {
		l := r.byShare[e.share]
		l.Remove(e.mine)
		if l.Len() == 0 {
			delete(r.byShare, e.share)
		}
	}
}

func (r *ring) get(k string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[k]
	if !ok {
		return "", false
	}
	return e.v, true
}

// notInContext is nil if task is known to be in the conversation
// contextID, else the refusal: a message going on with a task, or
// referring to one, is decided in the conversation it names (its
// session), and the agent goes on in the task's, or reads its history.
func (o *owners) notInContext(ctx context.Context, agentName, task, contextID string) *intercept.WireError {
	key := agentName + "\x00" + taskContextKey(task)
	known, in := o.inContext.Owns(key, contextID)
	if !known && o.shared != nil {
		got, ok, err := o.sharedConversation(ctx, key)
		if err != nil {
			return &intercept.WireError{Code: codeTaskNotFound, Message: "task not found (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"}
		}
		known, in = ok, ok && got == contextID
	}
	switch {
	case !known:
		// First: naming the contextId would not help.
		return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: the gateway does not know which conversation task " + task + " is in: the message is not forwarded"}
	case contextID == "":
		return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: a message naming task " + task + " (taskId, referenceTaskIds) names the conversation the task is in too (message.contextId): it is decided in that conversation"}
	case !in:
		return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: task " + task + " is not in conversation " + contextID + " (message.contextId): name the task's own"}
	}
	return nil
}

// maxSeenPerStream bounds the ids one stream remembers it recorded.
const maxSeenPerStream = 64

// contextKey is the key a context id is owned under, apart from task ids
// (an agent may use one value as both).
func contextKey(id string) string { return contextPrefix + id }

const contextPrefix = "context\x00"

// contextIDs returns the context ids in a result, in both versions'
// shapes: conversations belong to the principal that started them, like
// tasks (an agent may keep a context's history and read it to whoever
// names it).
func contextIDs(result jsontext.Value) []string {
	if result.Kind() != '{' {
		return nil
	}
	var ids []string
	_ = intercept.EachMember(result, func(k string, v jsontext.Value) error {
		switch k {
		case "contextId":
			ids = append(ids, unquote(v))
		case "task", "message", "statusUpdate", "artifactUpdate":
			ids = append(ids, intercept.StringMember(v, "contextId"))
		}
		return nil
	})
	return ids
}

// taskIDs returns the task ids in a result: a 0.3 Task (kind "task", id),
// a 0.3 event or message (taskId), or a 1.0 wrapper ({"task": {...}},
// {"message"|"statusUpdate"|"artifactUpdate": {... taskId}}).
func taskIDs(result jsontext.Value) []string {
	if result.Kind() != '{' {
		return nil
	}
	// One pass over the result's top-level members (its artifacts and
	// history can be large).
	var ids []string
	var kind, id string
	err := intercept.EachMember(result, func(k string, v jsontext.Value) error {
		switch k {
		case "kind":
			kind = unquote(v)
		case "id":
			id = unquote(v)
		case "taskId":
			ids = append(ids, unquote(v))
		case "task":
			ids = append(ids, intercept.StringMember(v, "id"))
		case "message", "statusUpdate", "artifactUpdate":
			ids = append(ids, intercept.StringMember(v, "taskId"))
		}
		return nil
	})
	if err != nil {
		return nil
	}
	if kind == "task" {
		ids = append(ids, id)
	}
	return ids
}

// unquote is v's string, or "" if v is not a string.
func unquote(v jsontext.Value) string {
	if v.Kind() != '"' {
		return ""
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return ""
	}
	return string(b)
}

// maxListLookups bounds how many owners one ListTasks answer may look up
// in the shared store (as MCP's tasks/list): an agent answering with a
// page of thousands of tasks would otherwise cost as many Redis round
// trips. Tasks past it that this process has not seen are held back, as
// tasks whose owner is unknown, and so are those after a lookup that
// failed.
const maxListLookups = 256

// filterList keeps, of a ListTasks result, the tasks owner created.
func (o *owners) filterList(ctx context.Context, agentName, owner string, result jsontext.Value) jsontext.Value {
	var r map[string]jsontext.Value
	if err := json.Unmarshal(result, &r); err != nil {
		return nil
	}
	var tasks []jsontext.Value
	if err := json.Unmarshal(r["tasks"], &tasks); err != nil && r["tasks"] != nil {
		return nil
	}
	kept := []jsontext.Value{}
	lookups := 0
	for _, t := range tasks {
		owns, asked, failed := o.ownsAsking(ctx, agentName, intercept.StringMember(t, "id"), owner, lookups < maxListLookups)
		switch {
		case failed:
			// The store does not answer (down, or stalled: each lookup
			// waits out its timeout): the rest are held back unasked
			// rather than the answer held a timeout per task.
			lookups = maxListLookups
		case asked:
			lookups++
		}
		if owns {
			kept = append(kept, t)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil
	}
	r["tasks"] = b
	// The count is the caller's tasks', under every spelling a reader
	// takes for totalSize (total_size: protobuf JSON, pydantic;
	// TotalSize: Go's encoding/json); another spelling of tasks, which
	// such a reader may take for the list, is left out: it was not cut.
	// Matched as encoding/json matches names, by Unicode case folding:
	// it reads "ta\u017fks" (a long s) as Tasks.
	for k := range r {
		switch folded := strings.ReplaceAll(k, "_", ""); {
		case strings.EqualFold(folded, "totalSize"):
			r[k], _ = json.Marshal(len(kept))
		case strings.EqualFold(folded, "tasks") && k != "tasks":
			delete(r, k)
		}
	}
	out, err := json.Marshal(r, json.Deterministic(true))
	if err != nil {
		return nil
	}
	return out
}

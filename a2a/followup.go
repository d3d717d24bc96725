package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Follow-ups: every request to an agent that is not a message (a task's
// get, cancel and subscribe, push configs, ListTasks, the extended card,
// an unknown method the operator lets through).
//
// A message is decided as an action of the agent; a follow-up reaches the
// same agent, so a route rule that closed the agent as a sink must close
// it to follow-ups too, or an agent that read a secret hands it over in
// whatever the request lets it choose: a params member the gateway does
// not read, metadata, historyLength, a ListTasks filter or page token, a
// push config's url or token, a config id, the tenant, the JSON-RPC id, an
// envelope member, the A2A-Extensions header. So a follow-up is one of two
// things:
//
//   - plain: it names at most the caller's own task (by the member its
//     method names it with) and carries nothing else but empty members
//     (null, "", {}, []: what SDK clients send for unset fields, such as
//     the JS SDK's tenant and cancel metadata). It is not decided: it is
//     sent re-encoded by the gateway (the method, the task id, the
//     gateway's own JSON-RPC id and A2A-Version, nothing else; the answer
//     gets the client's id back), so only the choice of task and the time
//     of the request are the caller's. Reading and cancelling one's tasks
//     must keep working after a deny (a client waits for the task it
//     started), and is not a handoff of data: deciding it would subject
//     polling to approvals, rate limits and default deny for nothing.
//   - anything else carries bytes of the caller's choosing to the agent,
//     which is what a message does: it is decided as the message it
//     amounts to — the agent's tool "send" (a message naming no skill,
//     the agent's general way in), with {"method", "params"} (and
//     "extensions") as arguments, same upstream and target — so route
//     rules, classes, default deny, manifests, approvals and rate limits
//     apply as to a message, and it is forwarded as sent only when
//     allowed. A denial is always thrown (-32090/-32091 with the
//     envelope): a rejected task is no answer to a tasks/get.
//
// "send" and not the task's skill: a skill id is a label the client picks
// and the agent need not heed, and whoever may send the agent a message
// naming no skill may send these bytes anyway; whoever may not, may not
// here either. Nor a tool of its own per method (a2a:research/tasks/get):
// no policy classes it, so no route rule would see it as a sink until an
// operator thought to, and the hole would stay open by default.
//
// What is left is small and documented (README, A2A): which of its tasks a
// plain request names (log2 of the tasks the caller started while it could
// still send, per request: the gateway's own rejected tasks are never
// forwarded) and when it is sent.

// plainTask names, for each method a plain follow-up may use, the params
// member that names the task ("" for none: ListTasks and the extended card
// take no params when plain). A method not listed is never plain: setting
// a push config carries a URL and a token, getting or deleting one a
// config id of the caller's choice.
var plainTask = map[string]string{
	"tasks/get":                          "id",
	"tasks/cancel":                       "id",
	"tasks/resubscribe":                  "id",
	"tasks/pushNotificationConfig/get":   "id", // without pushNotificationConfigId
	"tasks/pushNotificationConfig/list":  "id",
	"agent/getAuthenticatedExtendedCard": "",
	"GetTask":                            "id",
	"CancelTask":                         "id",
	"SubscribeToTask":                    "id",
	"ListTasks":                          "",
	"ListTaskPushNotificationConfigs":    "taskId",
	"ListTaskPushNotificationConfig":     "taskId",
	"GetExtendedAgentCard":               "",
}

// plainRequest returns the request the gateway sends for m when m is a
// plain follow-up (see above), or nil and what makes it otherwise: the
// params members and headers that carry data of the caller's.
func plainRequest(r *http.Request, m *intercept.Message) (*intercept.Message, []string) {
	var extra []string
	for _, v := range r.Header.Values("A2A-Extensions") {
		if strings.TrimSpace(v) != "" {
			extra = append(extra, "the A2A-Extensions header")
			break
		}
	}
	key, listed := plainTask[m.Method]
	if !listed {
		return nil, append(extra, "method "+m.Method)
	}
	var task jsontext.Value
	err := intercept.EachMember(m.Params, func(k string, v jsontext.Value) error {
		switch {
		case key != "" && k == key && v.Kind() == '"' && unquote(v) != "":
			task = v
		case intercept.EmptyValue(v):
		default:
			extra = append(extra, "params."+k)
		}
		return nil
	})
	if err != nil {
		return nil, append(extra, "params")
	}
	if len(extra) > 0 {
		return nil, extra
	}
	params := []byte("{}")
	if task != nil {
		params, _ = jsontext.AppendQuote([]byte("{"+`"`+key+`":`), unquote(task))
		params = append(params, '}')
	}
	method, _ := jsontext.AppendQuote(nil, m.Method)
	sent, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":` + string(method) + `,"params":` + string(params) + `}`))
	if err != nil {
		return nil, []string{"params"}
	}
	return sent, nil
}

// followUp gets m, a request that is not a message, past the decision
// point: it returns what to send the agent (sent), the client's id to put
// back into the answer when sent is the gateway's re-encoding of a plain
// m (nil otherwise), and the descriptor of the decision that allowed m
// (nil for a plain one). ok is false when the client has been answered:
// denied, or the decision could not be made (the agent's card could not
// be read): never forwarded.
//
// tasks are the tasks m names (each the caller's): decided, m is decided
// in their conversation (its session), as a message going on with them
// is; one whose conversation the gateway does not know is refused.
// conversation, if not "", is the conversation m names (the caller's):
// m is decided in it, and its tasks must be in it.
func (g *Gateway) followUp(w http.ResponseWriter, r *http.Request, a *agent, m *intercept.Message, v1 bool, owner string, tasks []string, conversation string) (sent *intercept.Message, clientID jsontext.Value, d *intercept.ActionDescriptor, ok bool) {
	if plain, _ := plainRequest(r, m); plain != nil {
		return plain, m.ID, nil, true
	}
	session := conversation
	for i, task := range tasks {
		c, err := g.tasks.conversationOf(r.Context(), a.Name, task)
		var why string
		code := intercept.CodeInvalidParams
		switch {
		case err != nil:
			// As a message naming the task is refused (send).
			code, why = codeTaskNotFound, "task not found (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"
		case c == "":
			why = "invalid params: the gateway does not know which conversation task " + task + " is in: " + m.Method + " with more than the task's id is not forwarded"
		case (i > 0 || conversation != "") && c != session:
			why = "invalid params: the tasks and conversations " + m.Method + " names are in different conversations"
		}
		if why != "" {
			writeJSON(w, http.StatusOK, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: code, Message: why}))
			return nil, nil, nil, false
		}
		session = c
	}
	// Decided as the message it amounts to. The card first, as for a
	// message: the decision reads what it declares of "send".
	if _, err := g.card(r.Context(), a, v1); err != nil {
		writeJSON(w, http.StatusBadGateway, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}))
		return nil, nil, nil, false
	}
	d = &intercept.ActionDescriptor{ToolName: "send", TargetEndpoint: a.target, Upstream: "a2a:" + a.Name, CallID: m.ID,
		ProtocolVersion: "a2a/" + map[bool]string{true: "1.0", false: "0.3"}[v1], SessionID: policySession(session)}
	d.ToolDescription, _ = a.cards.skill("send")
	if g.opts.AgentHeader != "" {
		d.Agent = r.Header.Get(g.opts.AgentHeader)
	}
	args, err := followUpArguments(r, m)
	var dec intercept.Decision
	if err != nil {
		dec = intercept.Decision{Verdict: intercept.Deny, Reason: intercept.ReasonPolicyError,
			PublicReason: "the request could not be described to the policy (" + err.Error() + "); it was not forwarded"}
	} else {
		d.Parameters = args
		dec = g.decide(r.Context(), d)
	}
	if dec.Verdict != intercept.Allow {
		dec.Mode = intercept.ModeThrow // only a message's answer can be a rejected task
		g.deny(w, m, v1, d, dec, "", owner, a)
		return nil, nil, nil, false
	}
	return m, nil, d, true
}

// followUpArguments are a decided follow-up's arguments: its method, its
// params, the A2A-Extensions it asks for, and its JSON-RPC id when that
// is longer than clients make.
func followUpArguments(r *http.Request, m *intercept.Message) (jsontext.Value, error) {
	var args struct {
		Method     string         `json:"method"`
		Params     jsontext.Value `json:"params,omitempty"`
		Extensions []string       `json:"extensions,omitempty"`
		// ID is a JSON-RPC id longer than clients make (freshID): data
		// the agent gets.
		ID jsontext.Value `json:"id,omitempty"`
	}
	args.Method, args.Params = m.Method, m.Params
	if !freshID(m.ID) {
		args.ID = m.ID
	}
	for _, v := range r.Header.Values("A2A-Extensions") {
		if v = strings.TrimSpace(v); v != "" {
			args.Extensions = append(args.Extensions, v)
		}
	}
	out, err := json.Marshal(args, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return out, nil
}

// decide asks the decision point about d; without one, d is denied.
func (g *Gateway) decide(ctx context.Context, d *intercept.ActionDescriptor) intercept.Decision {
	if g.ic == nil {
		return intercept.Decide(ctx, nil, d)
	}
	return g.ic.DecideAction(ctx, d)
}

// withID is the JSON-RPC answer out with id in place of the agent's: the
// answer to a request the gateway sent with an id of its own. An answer
// that is not one JSON-RPC response is an error.
func withID(out []byte, id jsontext.Value) ([]byte, error) {
	ans, err := intercept.DecodeMessage(out)
	if err != nil || (ans.Kind != intercept.KindResponse && ans.Kind != intercept.KindError) {
		return nil, errors.New("its answer is not a JSON-RPC response")
	}
	return intercept.WithMember(ans.Raw, "id", id)
}

// unknownNames checks the tasks and conversations the params of a method
// the gateway does not know (AllowUnknownMethods) name, at any depth
// (namedIDs): each named as a task or a conversation must be the
// caller's, as in the methods the gateway knows, and the conversations
// one; an id the method may mean otherwise (an "id", a string under
// "tasks") must not be another's task or conversation, and is the
// caller's task or conversation if the gateway knows it as one (one it
// knows as no one's is left to the method: a skill's, an extension's
// own). It returns the caller's tasks named and that conversation (""
// for none). params must be an object or absent:
// positional params would name a task the gateway cannot tell.
func (g *Gateway) unknownNames(ctx context.Context, a *agent, params jsontext.Value, owner string) (tasks []string, conversation string, err error) {
	if params == nil || params.Kind() == 'n' {
		return nil, "", nil
	}
	invalid := func(why string) error {
		return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + why}
	}
	if params.Kind() != '{' {
		return nil, "", invalid("a method the gateway does not know takes a params object (the gateway checks the tasks it names)")
	}
	objs := []jsontext.Value{params}
	if msg := intercept.Member(params, "message"); msg != nil && msg.Kind() != 'n' {
		if msg.Kind() != '{' {
			return nil, "", invalid("message must be an object")
		}
		objs = append(objs, msg)
	}
	known := append([]string{"task_id", "context_id", "reference_task_ids", "parent"}, a2aFields...)
	for i, obj := range objs {
		at := map[bool]string{true: "message.", false: ""}[i == 1]
		if why, bad := intercept.CaseVariant(obj, known); bad {
			return nil, "", invalid(at + why)
		}
		if k := notString(obj); k != "" {
			return nil, "", invalid(at + k + " must be a string")
		}
	}
	refs, err := namedIDs(params)
	if err != nil {
		return nil, "", invalid(err.Error())
	}
	inConversation := func(id string) error {
		if conversation != "" && id != conversation {
			return invalid("the conversations it names differ")
		}
		conversation = id
		return nil
	}
	for _, r := range refs {
		switch r.kind {
		case refContext:
			if err := g.tasks.notOwned(ctx, a.Name, contextKey(r.id), owner, "context not found"); err != nil {
				return nil, "", err
			}
			if err := inConversation(r.id); err != nil {
				return nil, "", err
			}
			continue
		case refID:
			// Another's task or conversation is not found, as when named
			// as one; the caller's is named as one; an id the gateway
			// knows as no one's is the method's.
			task, _ := g.tasks.whose(ctx, a.Name, r.id, owner, true)
			conv, _ := g.tasks.whose(ctx, a.Name, contextKey(r.id), owner, true)
			switch {
			case task == ownerUnknown || conv == ownerUnknown:
				return nil, "", &intercept.WireError{Code: codeTaskNotFound, Message: "task not found (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"}
			case task == ownedByOther:
				return nil, "", &intercept.WireError{Code: codeTaskNotFound, Message: "task not found"}
			case conv == ownedByOther:
				return nil, "", &intercept.WireError{Code: codeTaskNotFound, Message: "context not found"}
			}
			if conv == ownedByCaller {
				if err := inConversation(r.id); err != nil {
					return nil, "", err
				}
			}
			if task != ownedByCaller {
				continue
			}
		}
		if err := g.tasks.notOwned(ctx, a.Name, r.id, owner, "task not found"); err != nil {
			return nil, "", err
		}
		if g.tasks.rejectedOnly(a.Name, r.id) {
			return nil, "", &intercept.WireError{Code: codeTaskNotFound, Message: "task not found: the gateway rejected it, the agent never saw it"}
		}
		if !slices.Contains(tasks, r.id) {
			tasks = append(tasks, r.id)
		}
	}
	return tasks, conversation, nil
}

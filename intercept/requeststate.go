package intercept

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/jcs"
	"github.com/sluicehq/sluice/internal/ownership"
)

// MCP 2026-07-28 multi round-trip requests: an upstream that needs input
// answers a tools/call, prompts/get or resources/read with input_required
// and a requestState, and the client sends the same request again with
// its answers and the state. Policy decides the retry's arguments, but the
// upstream acts on the state, which the client holds: a state the client
// made up, or one the upstream gave another agent (it sees the gateway's
// credentials for every agent, so it cannot tell them apart, however it
// protects its states), would have the upstream do what policy never saw.
// So a requestState is forwarded only on the request it was issued for:
// the same agent (or principal), upstream, method, name and arguments.
// Anything else is refused with invalid params, as a server refuses a
// state it cannot verify.

// maxStates is how many issued requestStates an Interceptor remembers;
// past it the oldest are forgotten (and refused when sent back). One
// owner (taskOwner) holds at most maxStatesPerOwner of them, its own
// oldest forgotten past that: an agent made to answer without end pushes
// out only its own.
const (
	maxStates         = 100_000
	maxStatesPerOwner = maxStates / 10
)

// stateMember names the state in a result and in the retry's params.
const stateMember = "requestState"

func (i *Interceptor) stateTable() *ownership.Table {
	i.statesOnce.Do(func() {
		i.states = ownership.NewShared(maxStates, maxStatesPerOwner)
		i.stateCalls.max = maxAwaiting
	})
	return i.states
}

// maxAwaiting bounds each generation of the requests awaiting an answer
// (stateCalls): an answer that comes after two generations have filled is
// not taken as issuing a state, which is then refused when sent back.
const maxAwaiting = 10000

// stateCall is an allowed request awaiting its answer: what a requestState
// in that answer is bound to, less the hash of the arguments, taken only
// when a state comes (most answers carry none).
type stateCall struct {
	prefix   string // upstream, scope, owner, method and name
	args     []byte // the arguments, as sent
	approval string // the approval that allowed the request, if one did (Decision.ApprovalID)
}

// A RoundTripObserver is a Decider told when an upstream answers a
// request an approval allowed (Decision.ApprovalID) with input_required
// and a requestState: the retry carrying that state (its
// ActionDescriptor.UpstreamState) may go on under the same approval
// (approval.Gate). Deciders that wrap another pass it on.
type RoundTripObserver interface {
	UpstreamAsked(ctx context.Context, approvalID, state string)
}

// binding is the stateBinding of the request c holds.
func (c stateCall) binding() string { return c.prefix + "\x00" + argsHash(c.args) }

// stateBinding is what a requestState answering or sent with request m of
// the client of cc is bound to: its owner (as a task's), upstream and
// call. The arguments are compared in canonical form (RFC 8785), so a
// client that sends them again in another key order is not refused.
func stateBinding(ctx context.Context, m *Message, cc CallContext) string {
	return bindingPrefix(ctx, m, cc) + "\x00" + argsHash(m.Arguments)
}

func bindingPrefix(ctx context.Context, m *Message, cc CallContext) string {
	return cc.Upstream + "\x00" + cc.TaskScope + "\x00" + taskOwner(ctx, cc) + "\x00" + m.Method + "\x00" + m.Name
}

func argsHash(args jsontext.Value) string {
	if len(args) == 0 || args.Kind() == 'n' {
		args = jsontext.Value("{}")
	}
	if c := args.Clone(); jcs.Canonicalize(&c) == nil {
		args = c
	}
	sum := sha256.Sum256(args)
	return string(sum[:])
}

// sharedStateKey is the key of an issued state in the shared store
// (TaskStore): a NUL first, as an MCP task's, and a hash, as the state
// may be long.
func sharedStateKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "\x00mcp-state\x00" + hex.EncodeToString(sum[:])
}

// expectState notes the binding of m, an allowed 2026-07-28 request about
// to be forwarded, for ObserveRequestState to find when its answer comes.
// key is resultKey(cc, m.IDKey()), which the caller has made.
func (i *Interceptor) expectState(ctx context.Context, m *Message, cc CallContext, dec Decision, key string) {
	if m == nil || !m.IsAction() || !expectsState(cc) {
		return
	}
	i.stateTable()
	i.stateCalls.add(key, stateCall{bindingPrefix(ctx, m, cc), bytes.Clone(m.Arguments), dec.ApprovalID})
}

// expectsState reports whether the requests of the client of cc may be
// answered with a requestState (2026-07-28 and later).
func expectsState(cc CallContext) bool { return cc.ProtocolVersion >= "2026-07-28" }

// Answered forgets what expectState noted of the request idKey of the
// client of cc once its answer has been passed on, or never will be: a
// requestState in that answer was recorded before the client had it
// (ObserveRequestState). Without it every answered call stays in the
// table until two generations have filled, costing a growing map and
// the collector's time on every call, and an answer slower than 20,000
// others would find its request forgotten.
func (i *Interceptor) Answered(cc CallContext, idKey string) {
	if cc.ProtocolVersion < "2026-07-28" {
		return
	}
	i.stateCalls.take(resultKey(cc, idKey))
}

// AwaitingAnswers is how many allowed 2026-07-28 requests wait for their
// answer to be read for a requestState.
func (i *Interceptor) AwaitingAnswers() int {
	return i.stateCalls.len()
}

// awaiting holds requests awaiting an answer in two generations of at
// most max each: adding to a full one starts a new one and forgets the
// oldest. Cheaper per request than an LRU list, and as bounded.
type awaiting struct {
	mu        sync.Mutex
	max       int
	cur, prev map[string]stateCall
}

func (a *awaiting) add(k string, c stateCall) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil || len(a.cur) >= a.max {
		a.prev, a.cur = a.cur, make(map[string]stateCall)
	}
	a.cur[k] = c
}

func (a *awaiting) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cur) + len(a.prev)
}

// take removes and returns k's request.
func (a *awaiting) take(k string) (stateCall, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range [2]map[string]stateCall{a.cur, a.prev} {
		if c, ok := m[k]; ok {
			delete(m, k)
			return c, true
		}
	}
	return stateCall{}, false
}

// ObserveRequestState records the requestState in result, the upstream's
// answer to the request idKey (as [Message.IDKey] gives it) of the client
// of cc, as issued to that client for that request. Record it before the
// client has the answer, so that its retry finds it.
func (i *Interceptor) ObserveRequestState(ctx context.Context, cc CallContext, idKey string, result jsontext.Value) {
	state := StringMember(result, stateMember)
	if state == "" {
		return
	}
	i.stateTable()
	c, ok := i.stateCalls.take(resultKey(cc, idKey))
	if !ok {
		return // not an allowed call's answer: its state is refused
	}
	key := c.binding() + "\x00" + state
	// Held for the client it was issued to (the key binds it too): its
	// share of the table, not everyone's.
	i.states.ContainsOrAdd(key, shareOf(ctx, cc))
	if i.shares(cc) {
		// Another replica may get the retry. One that fails leaves the
		// state known here only: other replicas refuse it.
		_, _ = i.Tasks.Claim(context.WithoutCancel(ctx), sharedStateKey(key), "")
	}
	// Only a question goes on under the approval: a state in a complete
	// result (an upstream may echo one) is the call done, and a retry
	// carrying it would run the approved call again.
	if ro, ok := i.Decider.(RoundTripObserver); ok && c.approval != "" && StringMember(result, "resultType") == "input_required" {
		ro.UpstreamAsked(context.WithoutCancel(ctx), c.approval, state)
	}
}

// checkRequestState answers an action request m that carries a
// requestState not issued to the client of cc for this very request, or
// one an upstream could read otherwise (a case variant, which Go servers
// accept, or not a string); a nil reply lets it go on, with the state it
// carries, if any.
func (i *Interceptor) checkRequestState(ctx context.Context, m *Message, cc CallContext) (state string, reply []byte) {
	if !mayHoldState(m.Params) {
		return "", nil
	}
	var val jsontext.Value
	var why string
	_ = eachValidMember(m.Params, func(key string, v jsontext.Value) error {
		if strings.EqualFold(key, stateMember) {
			if key != stateMember && why == "" {
				why = fmt.Sprintf("member %q differs from %q only in case", key, stateMember)
			}
			val = v
		}
		return nil
	})
	refuse := func(why string) (string, []byte) {
		return "", ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "invalid params: requestState refused: " + why})
	}
	switch {
	case why != "":
		return refuse(why)
	case val == nil || val.Kind() == 'n':
		return "", nil
	case val.Kind() != '"':
		return refuse("it must be a string")
	}
	s := unquote(val)
	if s == "" {
		return "", nil
	}
	key := stateBinding(ctx, m, cc) + "\x00" + s
	known, _ := i.stateTable().Owns(key, "")
	if !known && i.shares(cc) {
		_, ok, err := i.Tasks.Owner(ctx, sharedStateKey(key))
		if err != nil {
			// Not known to be forged: the client is told to try again,
			// not to start its round trip over. The store's error (an
			// address, say) is the operator's, in the store's log.
			return "", ErrorResponse(m.ID, &WireError{Code: CodeInternalError, Message: "requestState not checked: it was not issued through this replica, and the store the replicas share issued states in did not answer; the request was not forwarded; send it again"})
		}
		if ok {
			i.states.ContainsOrAdd(key, shareOf(ctx, cc))
			known = true
		}
	}
	if !known {
		return refuse(fmt.Sprintf("upstream %q did not issue it to this agent in answer to this %s (the same name and arguments); send the request again without it", cc.Upstream, m.Method))
	}
	return s, nil
}

// mayHoldState reports whether params may have a member that a server
// reads as requestState: false when it has no escape and no "tate" in any
// case (no letter of it has a non-ASCII case fold, as the s of "request"
// has ſ), which most calls' params do not.
func mayHoldState(params []byte) bool {
	if bytes.IndexByte(params, '\\') >= 0 {
		return true
	}
	for i := 0; i+4 <= len(params); i++ {
		if params[i]|0x20 == 't' && params[i+1]|0x20 == 'a' && params[i+2]|0x20 == 't' && params[i+3]|0x20 == 'e' {
			return true
		}
	}
	return false
}

package intercept

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

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
// past it the oldest are forgotten (and refused when sent back).
const maxStates = 100_000

// stateMember names the state in a result and in the retry's params.
const stateMember = "requestState"

func (i *Interceptor) stateTable() *ownership.Table {
	i.statesOnce.Do(func() {
		i.states = ownership.New(maxStates)
		i.stateCalls, _ = lru.New[string, string](10000)
	})
	return i.states
}

// stateBinding is what a requestState answering or sent with request m of
// the client of cc is bound to: its owner (as a task's), upstream and
// call. The arguments are compared in canonical form (RFC 8785), so a
// client that sends them again in another key order is not refused.
func stateBinding(ctx context.Context, m *Message, cc CallContext) string {
	args := m.Arguments
	if len(args) == 0 || args.Kind() == 'n' {
		args = jsontext.Value("{}")
	}
	if c := args.Clone(); c.Canonicalize() == nil {
		args = c
	}
	sum := sha256.Sum256(args)
	return cc.Upstream + "\x00" + cc.TaskScope + "\x00" + taskOwner(ctx, cc) + "\x00" + m.Method + "\x00" + m.Name + "\x00" + string(sum[:])
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
func (i *Interceptor) expectState(ctx context.Context, m *Message, cc CallContext) {
	if m == nil || !m.IsAction() || cc.ProtocolVersion < "2026-07-28" {
		return
	}
	i.stateTable()
	i.stateCalls.Add(resultKey(cc, m.IDKey()), stateBinding(ctx, m, cc))
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
	k := resultKey(cc, idKey)
	b, ok := i.stateCalls.Peek(k)
	if !ok {
		return // not an allowed call's answer: its state is refused
	}
	i.stateCalls.Remove(k)
	key := b + "\x00" + state
	i.states.ContainsOrAdd(key, "")
	if i.shares(cc) {
		// Another replica may get the retry. One that fails leaves the
		// state known here only: other replicas refuse it.
		_, _ = i.Tasks.Claim(context.WithoutCancel(ctx), sharedStateKey(key), "")
	}
}

// checkRequestState answers an action request m that carries a
// requestState not issued to the client of cc for this very request, or
// one an upstream could read otherwise (a case variant, which Go servers
// accept, or not a string); nil lets it go on.
func (i *Interceptor) checkRequestState(ctx context.Context, m *Message, cc CallContext) []byte {
	var state jsontext.Value
	var why string
	_ = eachValidMember(m.Params, func(key string, val jsontext.Value) error {
		if strings.EqualFold(key, stateMember) {
			if key != stateMember && why == "" {
				why = fmt.Sprintf("member %q differs from %q only in case", key, stateMember)
			}
			state = val
		}
		return nil
	})
	refuse := func(why string) []byte {
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "invalid params: requestState refused: " + why})
	}
	switch {
	case why != "":
		return refuse(why)
	case state == nil || state.Kind() == 'n':
		return nil
	case state.Kind() != '"':
		return refuse("it must be a string")
	}
	s := unquote(state)
	if s == "" {
		return nil
	}
	key := stateBinding(ctx, m, cc) + "\x00" + s
	known, _ := i.stateTable().Owns(key, "")
	if !known && i.shares(cc) {
		if _, ok, err := i.Tasks.Owner(ctx, sharedStateKey(key)); err == nil && ok {
			i.states.ContainsOrAdd(key, "")
			known = true
		}
	}
	if !known {
		return refuse(fmt.Sprintf("upstream %q did not issue it to this agent in answer to this %s (the same name and arguments); send the request again without it", cc.Upstream, m.Method))
	}
	return nil
}

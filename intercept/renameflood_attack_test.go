package intercept

import (
	"context"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackRenamedStateFloodForgetsOthers: an owner holds at most a
// tenth of the requestStates remembered, but without authentication the
// owner is the name the client gives, which a 2026-07-28 request may
// change at each call: a client renaming itself every 10,000 states
// filled the table with shares of its own, and another client's state
// was forgotten, its retry refused mid round trip. Unauthenticated
// records now count against their client address's share; cursors the
// same way (ObserveCursor).
func TestAttackRenamedStateFloodForgetsOthers(t *testing.T) {
	i := &Interceptor{Decider: &StaticDecider{Allow: []string{"deploy"}}}
	aliceCtx := WithClientAddr(context.Background(), "192.0.2.1")
	malloryCtx := WithClientAddr(context.Background(), "192.0.2.66")
	alice := CallContext{Upstream: "u", Agent: "alice", ProtocolVersion: "2026-07-28"}
	call := func(id int, extra string) *Message {
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"deploy","arguments":{"n":1}` + extra + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	issue := func(ctx context.Context, cc CallContext, id int, state string) {
		m := call(id, "")
		if _, _, ok := i.CheckDecision(ctx, m, cc); !ok {
			t.Fatal("the call was not allowed")
		}
		i.ObserveRequestState(ctx, cc, m.IDKey(), jsontext.Value(`{"resultType":"input_required","requestState":"`+state+`"}`))
	}
	issue(aliceCtx, alice, 1, "alice-state")
	for n := range maxStates {
		mallory := CallContext{Upstream: "u", Agent: "mallory-" + strconv.Itoa(n/maxStatesPerOwner), ProtocolVersion: "2026-07-28"}
		issue(malloryCtx, mallory, 10+n, "m-"+strconv.Itoa(n))
	}
	if _, reply, ok := i.CheckDecision(aliceCtx, call(2, `,"requestState":"alice-state"`), alice); !ok {
		t.Errorf("alice's retry after a client renaming itself was issued %d states: %s", maxStates, reply)
	}
}

// TestAttackRenamedCursorFloodForgetsOthers: the cursors' table the same
// way: a client renaming itself every 10,000 cursors pushed out the
// cursor another client was given, whose next page was then a carry
// (denied once a route rule closes the upstream).
func TestAttackRenamedCursorFloodForgetsOthers(t *testing.T) {
	i := &Interceptor{}
	aliceCtx := WithClientAddr(context.Background(), "192.0.2.1")
	malloryCtx := WithClientAddr(context.Background(), "192.0.2.66")
	alice := CallContext{Upstream: "web", Agent: "alice"}
	i.ObserveCursor(aliceCtx, alice, "resources/list", jsontext.Value(`{"resources":[],"nextCursor":"alice-page-2"}`))
	msgs, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"alice-page-2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for n := range maxCursors + 10 {
		mallory := CallContext{Upstream: "web", Agent: "mallory-" + strconv.Itoa(n/maxCursorsPerOwner)}
		i.ObserveCursor(malloryCtx, mallory, "resources/list", jsontext.Value(`{"resources":[],"nextCursor":"m`+strconv.Itoa(n)+`"}`))
	}
	if !i.IsPlain(aliceCtx, msgs[0], alice) {
		t.Error("a client renaming itself pushed out the cursor another client was given")
	}
}

// TestAttackRenamedTaskFloodForgetsOthers: the tasks' owners the same
// way, though there the owner is checked (a task is its starter's): a
// client renaming itself every 10,000 tasks pushed out another client's
// task, "task not found" to its owner for good. The records now count
// against the address's share; each task is still owned by its agent.
func TestAttackRenamedTaskFloodForgetsOthers(t *testing.T) {
	i := &Interceptor{}
	aliceCtx := WithClientAddr(context.Background(), "192.0.2.1")
	malloryCtx := WithClientAddr(context.Background(), "192.0.2.66")
	alice := CallContext{Upstream: "u", Agent: "alice"}
	i.ObserveTask(aliceCtx, alice, []byte(`{"task":{"taskId":"alice-1"}}`))
	for n := range maxTasks {
		mallory := CallContext{Upstream: "u", Agent: "mallory-" + strconv.Itoa(n/maxTasksPerOwner)}
		i.ObserveTask(malloryCtx, mallory, []byte(`{"task":{"taskId":"m-`+strconv.Itoa(n)+`"}}`))
	}
	if !i.OwnsTask(aliceCtx, alice, "alice-1") {
		t.Errorf("alice's task is forgotten after a client renaming itself started %d tasks", maxTasks)
	}
	last := CallContext{Upstream: "u", Agent: "mallory-" + strconv.Itoa((maxTasks-1)/maxTasksPerOwner)}
	if !i.OwnsTask(malloryCtx, last, "m-"+strconv.Itoa(maxTasks-1)) {
		t.Error("the renaming client's newest task is forgotten")
	}
	if i.OwnsTask(malloryCtx, alice, "m-"+strconv.Itoa(maxTasks-1)) {
		t.Error("a task is owned by another agent than its starter")
	}
}

package intercept

import (
	"context"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackStateFloodForgetsOthersStates (found by an attacker review):
// an Interceptor remembers the last 100,000 requestStates issued, oldest
// forgotten first, whoever's: one agent making calls its upstream answers
// input_required pushed every other agent's states out, and their retries
// were refused ("did not issue it") mid round trip. An owner now holds at
// most a tenth of the table, forgetting its own oldest past that.
func TestAttackStateFloodForgetsOthersStates(t *testing.T) {
	i := &Interceptor{Decider: &StaticDecider{Allow: []string{"deploy"}}}
	ctx := context.Background()
	alice := CallContext{Upstream: "u", Agent: "alice", ProtocolVersion: "2026-07-28"}
	mallory := CallContext{Upstream: "u", Agent: "mallory", ProtocolVersion: "2026-07-28"}
	call := func(id int, extra string) *Message {
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"deploy","arguments":{"n":1}` + extra + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	issue := func(cc CallContext, id int, state string) {
		m := call(id, "")
		if _, _, ok := i.CheckDecision(ctx, m, cc); !ok {
			t.Fatal("the call was not allowed")
		}
		i.ObserveRequestState(ctx, cc, m.IDKey(), jsontext.Value(`{"resultType":"input_required","requestState":"`+state+`"}`))
	}
	issue(alice, 1, "alice-state")
	for n := range maxStates {
		issue(mallory, 10+n, "m-"+strconv.Itoa(n))
	}
	if _, reply, ok := i.CheckDecision(ctx, call(2, `,"requestState":"alice-state"`), alice); !ok {
		t.Errorf("alice's retry after another agent was issued %d states: %s", maxStates, reply)
	}
}

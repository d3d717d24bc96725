package intercept

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestRequestStateAcrossReplicas: a requestState an upstream issued
// through one replica is taken by another sharing the TaskStore, for the
// same agent and call only; without a shared store the other replica
// refuses it (fail closed), and a batch carrying an unissued state is
// refused whole.
func TestRequestStateAcrossReplicas(t *testing.T) {
	allow := &StaticDecider{Allow: []string{"deploy"}}
	store := &mapTasks{m: map[string]string{}}
	a, b, lone := &Interceptor{Decider: allow, Tasks: store}, &Interceptor{Decider: allow, Tasks: store}, &Interceptor{Decider: allow}
	ctx := context.Background()
	alice := CallContext{Upstream: "u", Agent: "alice", ProtocolVersion: "2026-07-28"}
	bob := alice
	bob.Agent = "bob"
	call := func(id, args, extra string) *Message {
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"deploy","arguments":` + args + extra + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := call("1", `{"env":"staging","n":1}`, "")
	for _, ic := range []*Interceptor{a, lone} {
		if _, _, ok := ic.CheckDecision(ctx, first, alice); !ok {
			t.Fatal("the first call was not allowed")
		}
		ic.ObserveRequestState(ctx, alice, first.IDKey(), jsontext.Value(`{"resultType":"input_required","requestState":"S1"}`))
	}
	retry := call("2", `{"n":1,"env":"staging"}`, `,"requestState":"S1"`) // another key order
	if _, reply, ok := b.CheckDecision(ctx, retry, alice); !ok {
		t.Errorf("alice's retry through B: %s", reply)
	}
	if _, reply, ok := b.CheckDecision(ctx, retry, bob); ok || !strings.Contains(string(reply), "-32602") {
		t.Errorf("bob's retry with alice's state through B: %s", reply)
	}
	if _, reply, ok := b.CheckDecision(ctx, call("3", `{"env":"production","n":1}`, `,"requestState":"S1"`), alice); ok {
		t.Errorf("alice's state on other arguments: %s", reply)
	}
	if _, reply, ok := (&Interceptor{Decider: allow}).CheckDecision(ctx, retry, alice); ok {
		t.Errorf("a replica without the shared store took a state it never saw: %s", reply)
	}
	if _, reply, ok := lone.CheckDecision(ctx, retry, alice); !ok {
		t.Errorf("alice's retry on the replica that saw it: %s", reply)
	}
	if reply, ok := a.CheckBatch(ctx, []*Message{call("4", `{}`, ""), call("5", `{}`, `,"requestState":"forged"`)}, alice); ok || !strings.Contains(string(reply), "requestState refused") {
		t.Errorf("a batch with a forged state: %s", reply)
	}
}

// TestMayHoldState: the fast path that skips looking for a requestState
// must never skip a member a server reads as one (Go's encoding/json folds
// case, ſ as s; escapes spell any letter).
func TestMayHoldState(t *testing.T) {
	for _, c := range []struct {
		params string
		want   bool
	}{
		{`{"name":"echo","arguments":{"message":"hi"}}`, false},
		{`{"name":"echo","requestState":"x"}`, true},
		{`{"name":"echo","REQUESTSTATE":"x"}`, true},
		{`{"name":"echo","reque` + "\u017f" + `tState":"x"}`, true},
		{`{"name":"echo","requestSt\u0061te":"x"}`, true},
		{`{"name":"echo","arguments":{"state":"open"}}`, true}, // may: the slow path decides
	} {
		if got := mayHoldState([]byte(c.params)); got != c.want {
			t.Errorf("mayHoldState(%s) = %v, want %v", c.params, got, c.want)
		}
	}
	// And the slow path refuses the ſ spelling as a case variant.
	m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"reque` + "\u017f" + `tState":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var i Interceptor
	if _, r := i.checkRequestState(context.Background(), m, CallContext{Upstream: "u", ProtocolVersion: "2026-07-28"}); r == nil {
		t.Error("a requestState spelled with ſ was not refused")
	}
}

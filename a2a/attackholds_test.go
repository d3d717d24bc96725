package a2a

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
	"strings"
	"testing"
)

// TestAttackResisted: forms the gateway resists (these pass).
func TestAttackResisted(t *testing.T) {
	agent := newRecAgent(t, goodCard)
	gw := serveAs(t, &denyText{}, agent.srv.URL, Options{})
	do(t, "POST", gw.URL+"/a2a/stub", "alice", "", sendHi) // t-1? denied: no
	for name, c := range map[string]struct{ v, body string }{
		"case":     {"", `{"jsonrpc":"2.0","id":1,"method":"Message/Send","params":{"message":{"parts":[{"kind":"text","text":"EVIL"}]}}}`},
		"batch":    {"", `[{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"EVIL"}]}}}]`},
		"stream":   {"", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"parts":[{"kind":"text","text":"EVIL"}]}}}`},
		"v1":       {"1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"EVIL"}]}}}`},
		"file uri": {"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"file","file":{"uri":"http://x/EVIL"}}]}}}`},
		"data":     {"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"data","data":{"a":"EVIL"}}]}}}`},
		"dup":      {"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"ok","text":"EVIL"}]}}}`},
		"resub":    {"", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"t-x","message":{"parts":[{"kind":"text","text":"EVIL"}]}}}`},
	} {
		do(t, "POST", gw.URL+"/a2a/stub", "bob", c.v, c.body)
		_ = name
	}
	for _, p := range []string{"/a2a/stub/rest/tasks/t-x", "/a2a/stub/rest/tasks/own?id=t-x"} {
		do(t, "GET", gw.URL+p, "bob", "", "")
	}
	if agent.saw("EVIL") || agent.saw("t-x") {
		t.Errorf("reached the agent: %q", agent.seen)
	}
}

type denyText struct{}

func (denyText) Decide(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	if strings.Contains(string(d.Parameters), "EVIL") {
		return intercept.Decision{Verdict: intercept.Deny, Reason: "evil"}, nil
	}
	return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
}

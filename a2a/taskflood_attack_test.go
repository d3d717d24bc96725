package a2a

import (
	"strings"
	"testing"
)

// TestAttackEvictByTaskFlood (found by an attacker review): the owner
// table forgets its oldest task first, whoever's. Denied messages were
// kept out of it (TestAttackEvictByDeniedFlood), but allowed ones are
// not: bob sending 60 messages the agent answers with a task each, past
// MaxTasks (50), pushed alice's task out, which then answered her "task
// not found" for good. One principal now holds at most a tenth of the
// table, forgetting its own oldest past that.
func TestAttackEvictByTaskFlood(t *testing.T) {
	agent := newRecAgent(t, goodCard)
	gw := serveAs(t, allow, agent.srv.URL, Options{MaxTasks: 50})
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", sendHi); !strings.Contains(got, `"t-1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	for i := 0; i < 60; i++ {
		do(t, "POST", gw.URL+"/a2a/stub", "bob", "", sendHi)
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-1"}}`)
	if strings.Contains(got, "task not found") {
		t.Errorf("after bob's 60 tasks alice's task is gone: %s", got)
	}
}

package a2a

import (
	"strings"
	"testing"
)

// TestAttackUnknownMethodOthersTask: with AllowUnknownMethods, an unknown
// method is decided as a message and forwarded, but the tasks and
// conversations its params name were not checked: bob, allowed to send,
// named alice's task (or conversation) in a method the agent implements
// and the agent acted on it for him. Every member a known method names a
// task or a conversation with must name the caller's in an unknown
// method too, and params that are not an object (positional) are refused.
func TestAttackUnknownMethodOthersTask(t *testing.T) {
	agent := newRecAgent(t, goodCard)
	gw := serveAs(t, allow, agent.srv.URL, Options{AllowUnknownMethods: true})
	rpc := gw.URL + "/a2a/stub"
	if got := do(t, "POST", rpc, "alice", "", sendHi); !strings.Contains(got, `"t-1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	if got := do(t, "POST", rpc, "bob", "", sendHi); !strings.Contains(got, `"t-2"`) {
		t.Fatalf("bob's task: %s", got)
	}
	// Control: bob's own task, by any of the members, reaches the agent.
	if got := do(t, "POST", rpc, "bob", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/annotate","params":{"id":"t-2","taskId":"t-2","contextId":"c-t-2","note":"mine"}}`); !strings.Contains(got, `"result"`) || !agent.saw(`"note":"mine"`) {
		t.Fatalf("bob's unknown method on his own task was not forwarded: %s", got)
	}
	for _, c := range []struct{ name, version, params, want string }{
		{"id", "", `{"id":"t-1"}`, "task not found"},
		{"taskId", "", `{"taskId":"t-1"}`, "task not found"},
		{"task_id", "", `{"task_id":"t-1"}`, "task not found"},
		{"own id, other's taskId", "", `{"id":"t-2","taskId":"t-1"}`, "task not found"},
		{"1.0 resource name", "1.0", `{"name":"tasks/t-1"}`, "task not found"},
		{"resource parent", "1.0", `{"parent":"tasks/t-1/pushNotificationConfigs"}`, "task not found"},
		{"parent case variant", "1.0", `{"Parent":"tasks/t-1"}`, "only in case"},
		{"message.taskId", "", `{"message":{"taskId":"t-1"}}`, "task not found"},
		{"message.task_id", "1.0", `{"message":{"task_id":"t-1"}}`, "task not found"},
		{"referenceTaskIds", "", `{"message":{"referenceTaskIds":["t-2","t-1"]}}`, "task not found"},
		{"contextId", "", `{"contextId":"c-t-1"}`, "context not found"},
		{"message.context_id", "", `{"message":{"context_id":"c-t-1"}}`, "context not found"},
		{"case variant", "", `{"TaskID":"t-1"}`, "only in case"},
		{"id not a string", "", `{"id":["t-1"]}`, "must be a string"},
		{"positional", "", `["t-1"]`, "params object"},
	} {
		got := do(t, "POST", rpc, "bob", c.version, `{"jsonrpc":"2.0","id":1,"method":"tasks/annotate","params":`+c.params+`}`)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: bob naming alice's task in an unknown method answered %s, want %q", c.name, got, c.want)
		}
	}
	if agent.saw("t-1") {
		t.Errorf("the agent got an unknown method naming alice's task t-1 from bob: %q", agent.seen[2:])
	}
}

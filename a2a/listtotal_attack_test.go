package a2a

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackListTasksTotalOfAll: a ListTasks answer is cut to the
// caller's tasks, and its totalSize to their number; but the agent's
// count of every principal's tasks went on under total_size (which
// Python agents write and pydantic and protobuf readers take for
// totalSize), TotalSize (Go's encoding/json reads it so) and the tasks
// themselves under "Tasks" (and "taſks", with a long s, which Go's
// encoding/json folds to "Tasks" too). Alice's list tells her of her
// task only.
func TestAttackListTasksTotalOfAll(t *testing.T) {
	var n atomic.Int32
	srv := jsonRPCAgent(t, func(w http.ResponseWriter, method string, id jsontext.Value) {
		w.Header().Set("Content-Type", "application/json")
		if method == "ListTasks" {
			all := `[{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}},{"id":"t-2","contextId":"c-2","status":{"state":"TASK_STATE_COMPLETED"}}]`
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tasks":%s,"Tasks":%s,"taſks":%s,"totalSize":2,"total_size":2,"TotalSize":2,"totalſize":2,"pageSize":50}}`, id, all, all, all)
			return
		}
		n := n.Add(1)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"t-%d","contextId":"c-%d","status":{"state":"TASK_STATE_COMPLETED"}}}}`, id, n, n)
	})
	gw := serveAs(t, allow, srv.URL, Options{})
	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "1.0", send); !strings.Contains(got, `"t-1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "1.0", send); !strings.Contains(got, `"t-2"`) {
		t.Fatalf("bob's task: %s", got)
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "1.0", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}`)
	var ans struct {
		Result map[string]jsontext.Value `json:"result"`
	}
	if err := json.Unmarshal([]byte(got), &ans); err != nil || ans.Result == nil {
		t.Fatalf("ListTasks: %s", got)
	}
	if strings.Contains(got, "t-2") {
		t.Errorf("alice's list names bob's task: %s", got)
	}
	for k, v := range ans.Result {
		if strings.EqualFold(strings.ReplaceAll(k, "_", ""), "totalSize") && string(v) != "1" {
			t.Errorf("alice's list says %s %s, want 1 (her tasks): %s", k, v, got)
		}
	}
	if string(ans.Result["tasks"]) == "" || !strings.Contains(string(ans.Result["tasks"]), "t-1") {
		t.Errorf("alice's list lost her task: %s", got)
	}
}

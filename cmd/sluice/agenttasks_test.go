package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestA2ATasksAcrossReplicas: with agent_tasks in Redis a task created
// through one replica is its creator's through another (another
// principal's "not found" across replicas: a2a's TestSharedTaskOwners);
// without it the other replica does not know the task; with Redis down a
// replica that never saw the task answers "not found".
func TestA2ATasksAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	base := serveBenchAgent(t)

	cfg := "agent_header: X-Agent\npolicy: {default: allow}\nagents: [{name: helper, url: " + base + "}]\n"
	shared := cfg + "agent_tasks: {redis_url: \"" + srv.URL() + "\"}\n"
	a, b, c, lone := startServe(t, shared), startServe(t, shared), startServe(t, shared), startServe(t, cfg)
	root := func(r *running) string { return strings.TrimSuffix(r.url, "/mcp/demo") }
	call := func(r *running, who, body string) string { return a2aPost(t, root(r)+"/a2a/helper", who, body) }
	sent := call(a, "alice", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
	if !strings.Contains(sent, `"id":"t7"`) {
		t.Fatalf("send through A: %s", sent)
	}
	get := `{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":"t7"}}`
	if got := call(b, "alice", get); strings.Contains(got, "not found") || !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Errorf("alice's task through B: %s", got)
	}
	// Without authentication the task is the agent's the header named
	// (TestAttackConversationChangesAgent), on every replica.
	if got := call(b, "bob", get); !strings.Contains(got, "task not found") {
		t.Errorf("alice's task read as bob through B: %s", got)
	}
	if got := call(lone, "alice", get); !strings.Contains(got, "task not found") {
		t.Errorf("a replica without agent_tasks: %s", got)
	}
	// Redis gone: a replica that has not seen the task answers "not
	// found" (fail closed), never someone else's task.
	srv.Stop()
	if got := call(c, "alice", get); !strings.Contains(got, "task not found") {
		t.Errorf("with Redis down, a replica that never saw the task: %s", got)
	}
}

// a2aPost posts an A2A v1.0 JSON-RPC body to url as agent who (the
// X-Agent header) and returns the answer's body.
func a2aPost(t *testing.T, url, who, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-Agent", who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return string(out)
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestApprovalGoesOnAcrossReplicas: through sluice serve (the audit and
// rate-limit gates in front of the approval gate) and two replicas
// sharing Redis for approvals and requestStates: an operator approves
// on B the call held on A; A forwards it, and its upstream answers
// input_required; the retry answering the upstream, through B, goes on
// under the approval rather than being held again. Sent once more, it is
// held: an upstream's state goes on once.
func TestApprovalGoesOnAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy: {default: allow, result_mode: tool_result, require_approval: [echo]}
approvals: {redis_url: "` + srv.URL() + `", key_prefix: "test:apr:"}
agent_tasks: {redis_url: "` + srv.URL() + `", key_prefix: "test:st:"}
rate_limits: {rules: [{id: calls, rate: "100/s", by: [principal]}]}
`
	a, b := startServeWith(t, cfg, mrtrEcho), startServeWith(t, cfg, mrtrEcho)
	echo := `{"name":"echo","arguments":{"message":"one"}}`
	held := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo)
	id := approvalID.FindString(held)
	if id == "" {
		t.Fatalf("first call: %s, want it held for approval", held)
	}
	tok, err := os.ReadFile(filepath.Join(b.dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	if got := adminDo(t, "POST", "http://"+b.admin+"/admin/approvals/"+id, "application/json", `{"action":"approve"}`,
		map[string]string{"Authorization": "Bearer " + strings.TrimSpace(string(tok))}); got != 200 {
		t.Fatalf("approving on B: %d", got)
	}
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo); !strings.Contains(got, `"requestState":"st-one"`) {
		t.Fatalf("the approved call: %s, want the upstream's input_required", got)
	}
	retry := `{"name":"echo","arguments":{"message":"one"},"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"st-one"}`
	if got := modernCallAs(t, b.url, "alice", "tools/call", "echo", retry); !strings.Contains(got, `"text":"Echo: one"`) {
		t.Fatalf("the retry answering the upstream, through B: %s, want the echo", got)
	}
	if got := modernCallAs(t, b.url, "alice", "tools/call", "echo", retry); strings.Contains(got, `"text":"Echo: one"`) || approvalID.FindString(got) == "" {
		t.Errorf("the same retry again: %s, want it held for a new approval", got)
	}
}

package gateway

// Tests from a parser-differential and era-confusion review: each fails on
// the code it was written against.

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// buildTaskServer builds testdata/taskserver, an mcp-go stdio server with
// MCP tasks enabled whose read_secret tool may run as a task.
func buildTaskServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "taskserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/taskserver").CombinedOutput(); err != nil {
		t.Fatalf("building taskserver: %v\n%s", err, out)
	}
	return bin
}

// principalGateway serves g with the principal named by X-Test-Principal
// (as the auth middleware would set it).
func principalGateway(t *testing.T, g *Gateway) *httptest.Server {
	t.Helper()
	h := g.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get("X-Test-Principal"); p != "" {
			r = r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: p}))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw
}

// TestStatelessTasksShared: MCP 2026-07-28 requests to a stdio upstream
// share one upstream connection, and the gateway takes a request's era
// from the Mcp-Protocol-Version header alone. Bob sends tasks/list and
// tasks/result with that header and no _meta: the gateway treats them as
// 2026-07-28 and sends them down the shared connection, where the mcp-go
// server, seeing no protocol version in the body, serves them as 2025-11-25
// requests of its one session, the session every stateless client shares.
// Bob lists the task alice's allowed read_secret call created and reads
// its result, a call policy denies him. The gateway should not forward a
// request whose era the upstream cannot see (a stateless request without
// the _meta protocol version, or with task methods it cannot attribute to
// the caller), answering with a clear JSON-RPC error instead.
func TestStatelessTasksShared(t *testing.T) {
	dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if d.ToolName == "read_secret" && d.Agent == "alice" {
			return intercept.Decision{Verdict: intercept.Allow, Reason: "alice's own secret"}, nil
		}
		return intercept.Decision{Verdict: intercept.Deny, Reason: "not yours"}, nil
	})
	g, err := New(Options{Upstreams: []Upstream{{Name: "tasks", Command: buildTaskServer(t)}}},
		&intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/tasks"
	as := func(who string, h map[string]string) map[string]string {
		h["X-Test-Principal"] = who
		return h
	}

	// Alice runs her secret as a task.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	status, _, body := post(t, u, as("alice", modernHeaders("tools/call", "read_secret")),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{"owner":"alice"},"task":{},`+meta+`}}`)
	task := regexp.MustCompile(`"taskId":"([^"]+)"`).FindStringSubmatch(body)
	if status != 200 || task == nil {
		t.Fatalf("alice's task: %d %s", status, body)
	}

	// Bob, whom policy denies read_secret, asks the shared connection.
	_, _, denied := post(t, u, as("bob", modernHeaders("tools/call", "read_secret")),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_secret","arguments":{"owner":"alice"},`+strings.Replace(meta, `"a"`, `"b"`, 1)+`}}`)
	if strings.Contains(denied, "is 42") {
		t.Fatalf("bob's own call was not denied: %s", denied)
	}
	hdr := func(method string) map[string]string {
		return as("bob", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method})
	}
	_, _, list := post(t, u, hdr("tasks/list"), `{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`)
	if strings.Contains(list, task[1]) {
		t.Errorf("bob listed alice's task %s: %s", task[1], list)
	}
	_, _, res := post(t, u, hdr("tasks/result"), `{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"`+task[1]+`"}}`)
	if strings.Contains(res, "the secret of alice") {
		t.Errorf("bob read the result of alice's call, which policy denies him: %s", res)
	}

	// With the era in _meta too: the task is still alice's alone.
	bobMeta := strings.Replace(meta, `"a"`, `"b"`, 1)
	for _, method := range []string{"tasks/get", "tasks/result"} {
		h := as("bob", modernHeaders(method, ""))
		if method == "tasks/get" {
			h["Mcp-Name"] = task[1]
		}
		_, _, got := post(t, u, h, `{"jsonrpc":"2.0","id":5,"method":"`+method+`","params":{"taskId":"`+task[1]+`",`+bobMeta+`}}`)
		if strings.Contains(got, "the secret of alice") || !strings.Contains(got, "task not found") {
			t.Errorf("bob's %s on alice's task: %s, want task not found", method, got)
		}
		_, _, got = post(t, u, h, `{"jsonrpc":"2.0","id":6,"method":"`+method+`","params":{"TaskId":"`+task[1]+`",`+bobMeta+`}}`)
		if strings.Contains(got, "the secret of alice") || !strings.Contains(got, "-32602") && !strings.Contains(got, "-32020") {
			t.Errorf("bob's %s with TaskId: %s, want it refused", method, got)
		}
	}
	_, _, list = post(t, u, as("bob", modernHeaders("tasks/list", "")), `{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{`+bobMeta+`}}`)
	if strings.Contains(list, task[1]) {
		t.Errorf("bob listed alice's task %s: %s", task[1], list)
	}
	// Alice reads her own (tasks/get: 2026-07-28 has no tasks/result),
	// naming the task in Mcp-Name as the tasks extension has clients do.
	_, _, mine := post(t, u, as("alice", modernHeaders("tasks/get", task[1])), `{"jsonrpc":"2.0","id":8,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta+`}}`)
	if !strings.Contains(mine, task[1]) || strings.Contains(mine, "not found") || strings.Contains(mine, `"error"`) {
		t.Errorf("alice's own tasks/get: %s", mine)
	}
}

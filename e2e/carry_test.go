package e2e

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestCarryAfterRouteRuleTS: the official TypeScript SDK client runs its
// full scenario against server-everything, whose echo is a network sink,
// after reading a sensitive file through the filesystem server as the
// same agent. What carries data to everything is refused — the
// completion, its answers to everything's sampling and elicitation
// requests — while the session, lists, reads, prompts and the
// cancellation of its own call still work; another agent completes as
// before.
func TestCarryAfterRouteRuleTS(t *testing.T) {
	requireNode(t)
	httpURL := startServer(t, "streamableHttp")
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/salaries.csv", []byte("name,salary\nalice,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  result_mode: tool_result
  tool_classes:
    files/read_text_file: [source:local, source:sensitive]
    everything/echo: [sink:network]
  route_rules:
    - id: no_sink_after_sensitive_source
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network]}
      scope: agent
      reason: no network sink after a sensitive read
`), "e2e policy", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{AgentHeader: "X-Agent", Upstreams: []gateway.Upstream{
		{Name: "files", Command: "node", Args: []string{wd + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", dir}},
		{Name: "everything", URL: httpURL},
	}}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	run := func(agent, route string, extra ...string) map[string]any {
		return runClient(t, append([]string{"--transport", "streamable-http", "--url", srv.URL + "/mcp/" + route, "--header", "X-Agent: " + agent}, extra...)...)
	}
	step := func(out map[string]any, name string) string {
		steps, _ := out["steps"].(map[string]any)
		b, _ := json.Marshal(steps[name])
		return string(b)
	}
	bob := run("bob", "everything")
	if got := step(bob, "completion"); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("a clean agent's completion: %s", got)
	}
	read := run("alice", "files", "--scenario", "calls", "--call", `read_text_file={"path":"`+dir+`/salaries.csv"}`)
	if b, _ := json.Marshal(read); !strings.Contains(string(b), "alice,1") {
		t.Fatalf("reading the sensitive file: %s", b)
	}
	// Over /ws (the relay) the agent is the client's name.
	runWS := func(route string, extra ...string) map[string]any {
		return runClient(t, append([]string{"--transport", "websocket", "--url", strings.Replace(srv.URL, "http://", "ws://", 1) + "/ws/" + route}, extra...)...)
	}
	read = runWS("files", "--scenario", "calls", "--call", `read_text_file={"path":"`+dir+`/salaries.csv"}`)
	if b, _ := json.Marshal(read); !strings.Contains(string(b), "alice,1") {
		t.Fatalf("reading the sensitive file over /ws: %s", b)
	}
	for name, alice := range map[string]map[string]any{"/mcp": run("alice", "everything"), "/ws": runWS("everything")} {
		t.Run(name, func(t *testing.T) { afterRead(t, alice, step) })
	}
}

func afterRead(t *testing.T, alice map[string]any, step func(map[string]any, string) string) {
	for _, s := range []string{"initialize", "ping", "tools_list", "resources_list", "resources_read", "resource_templates_list", "prompts_list", "prompts_get"} {
		if got := step(alice, s); !strings.Contains(got, `"ok":true`) {
			t.Errorf("%s after the read: %s, want it to work", s, got)
		}
	}
	if got := step(alice, "echo"); !strings.Contains(got, "no_sink_after_sensitive_source") {
		t.Errorf("echo after the read: %s, want the route rule's deny", got)
	}
	if got := step(alice, "completion"); !strings.Contains(got, `"ok":false`) || !strings.Contains(got, "no_sink_after_sensitive_source") {
		t.Errorf("completion after the read: %s, want a JSON-RPC error naming the route rule", got)
	}
	for _, s := range []string{"sampling", "elicitation"} {
		if got := step(alice, s); !strings.Contains(got, "withheld by the gateway") {
			t.Errorf("%s after the read: %s, want everything told its answer was withheld", s, got)
		}
	}
	if got := step(alice, "cancellation"); !strings.Contains(got, `"rejected":true`) {
		t.Errorf("cancelling its own call after the read: %s", got)
	}
}

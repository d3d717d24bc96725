package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// startAgent runs the @a2a-js/sdk echo agent and returns its base URL.
func startAgent(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("node_modules/@a2a-js/sdk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node_modules/@a2a-js/sdk missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("node_modules/@a2a-js/sdk missing: run `npm ci` in e2e/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", "a2a-agent.mjs")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u := sc.Text(); strings.HasPrefix(u, "http://") {
				found <- u
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the A2A agent did not start")
		return ""
	}
}

// a2aClient runs a2a-client.mjs and returns its transcript.
func a2aClient(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", append([]string{"a2a-client.mjs"}, args...)...).Output()
	if err != nil {
		t.Fatalf("a2a client %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// principals stands in for the auth middleware: X-Test-Principal names the
// authenticated caller.
func principals(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Test-Principal"); id != "" {
			r = r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: id}))
		}
		h.ServeHTTP(w, r)
	})
}

// a2aGateway serves agent behind Sluice (with the MCP upstreams ups) and
// returns the gateway's base URL.
func a2aGateway(t *testing.T, dec intercept.Decider, agentURL string, ups ...gateway.Upstream) string {
	t.Helper()
	ic := &intercept.Interceptor{Decider: dec}
	ag, err := a2a.New(a2a.Options{Agents: []a2a.Agent{{Name: "echo", URL: agentURL}}}, ic)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Upstreams: ups, Mount: map[string]http.Handler{"/a2a/": ag.Handler()}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(principals(g.Handler()))
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

// The @a2a-js/sdk client gets the same transcript from the SDK's server
// directly and through Sluice — send, stream, get, resubscribe, cancel —
// in A2A 1.0 and 0.3 (ids and times aside).
func TestA2AThroughGateway(t *testing.T) {
	agent := startAgent(t)
	gw := a2aGateway(t, allowAll, agent)
	for _, v := range []string{"1.0", "0.3"} {
		direct := a2aClient(t, "--url", agent, "--version", v)
		through := a2aClient(t, "--url", gw+"/a2a/echo/", "--version", v)
		if strings.Contains(direct, `"error"`) || !strings.Contains(direct, "echo: hello stream") {
			t.Fatalf("A2A %s direct: %s", v, direct)
		}
		var d, th any
		json.Unmarshal([]byte(direct), &d)
		json.Unmarshal([]byte(through), &th)
		if diff := cmp.Diff(d, th); diff != "" {
			t.Errorf("A2A %s: through Sluice differs from direct (-direct +through):\n%s", v, diff)
		}
	}
	// The card the client read points at the gateway.
	resp, err := http.Get(gw + "/a2a/echo/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		URL string `json:"url"`
	}
	json.NewDecoder(resp.Body).Decode(&card)
	if card.URL != gw+"/a2a/echo" {
		t.Errorf("card url %q, want %q", card.URL, gw+"/a2a/echo")
	}
}

// A sensitive MCP read, then a handoff of data to an external A2A agent by
// the same principal in a new session, is one source→sink flow: the route
// rule denies the handoff (a soft deny: a rejected task with the envelope
// and its evidence), for both A2A versions; another principal's handoff
// goes through, and cannot read the first principal's tasks.
func TestA2ACrossProtocolRouteRule(t *testing.T) {
	requireNode(t)
	agent := startAgent(t)
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
    a2a:echo/send: [sink:external]
  route_rules:
    - id: no_handoff_after_sensitive_read
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network, sink:external]}
      scope: agent
      reason: no handoff to an external agent after a sensitive read
`), "e2e policy", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := a2aGateway(t, p, agent, gateway.Upstream{Name: "files", Command: "node",
		Args: []string{wd + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", dir}})

	bob := a2aClient(t, "--url", gw+"/a2a/echo/", "--scenario", "send", "--text", "bob was here", "--header", "X-Test-Principal: bob")
	if !strings.Contains(bob, "echo: bob was here") {
		t.Fatalf("bob's handoff before any read: %s", bob)
	}
	read, _ := json.Marshal(runClient(t, "--transport", "streamable-http", "--url", gw+"/mcp/files", "--header", "X-Test-Principal: alice",
		"--scenario", "calls", "--call", `read_text_file={"path":"`+dir+`/salaries.csv"}`))
	if !strings.Contains(string(read), "alice,1") {
		t.Fatalf("alice's sensitive read: %s", read)
	}
	for _, v := range []string{"1.0", "0.3"} {
		got := a2aClient(t, "--url", gw+"/a2a/echo/", "--version", v, "--scenario", "send", "--text", "alice,1", "--header", "X-Test-Principal: alice")
		for _, want := range []string{`"status":"denied"`, `"code":"route_rule_deny"`, `"matched_route_rule_id":"no_handoff_after_sensitive_read"`,
			`"matched_tool_classes":["sink:external"]`, `"txn_id"`} {
			if !strings.Contains(got, want) {
				t.Errorf("A2A %s: alice's handoff %s lacks %s", v, got, want)
			}
		}
		if strings.Contains(got, "echo: alice,1") {
			t.Errorf("A2A %s: the handoff reached the agent: %s", v, got)
		}
	}
	// Bob's task is not alice's to read.
	var sent []map[string]map[string]any
	raw := a2aClient(t, "--url", gw+"/a2a/echo/", "--scenario", "send", "--text", "mine", "--header", "X-Test-Principal: bob", "--raw-ids")
	json.Unmarshal([]byte(raw), &sent)
	task, _ := sent[0]["send"]["id"].(string)
	if task == "" {
		t.Fatalf("no task id in %s", raw)
	}
	if got := a2aClient(t, "--url", gw+"/a2a/echo/", "--scenario", "get", "--task", task, "--header", "X-Test-Principal: alice"); !strings.Contains(got, "error") || strings.Contains(got, "mine") {
		t.Errorf("alice reading bob's task: %s, want task not found", got)
	}
	if got := a2aClient(t, "--url", gw+"/a2a/echo/", "--scenario", "get", "--task", task, "--header", "X-Test-Principal: bob"); !strings.Contains(got, "echo: mine") {
		t.Errorf("bob reading his task: %s", got)
	}
}

package e2e

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
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
func startAgent(t *testing.T, env ...string) string {
	t.Helper()
	if _, err := os.Stat("node_modules/@a2a-js/sdk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node_modules/@a2a-js/sdk missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("node_modules/@a2a-js/sdk missing: run `npm ci` in e2e/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", "a2a-agent.mjs")
	cmd.Env = append(os.Environ(), env...)
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
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("a2a client %v: %v\n%s\n%s", args, err, out, lastLines(string(stderr), 20))
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
	return a2aGatewayWith(t, dec, a2a.Options{Agents: []a2a.Agent{{Name: "echo", URL: agentURL}}}, ups...)
}

func a2aGatewayWith(t *testing.T, dec intercept.Decider, opts a2a.Options, ups ...gateway.Upstream) string {
	t.Helper()
	ic := &intercept.Interceptor{Decider: dec}
	ag, err := a2a.New(opts, ic)
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

// TestA2ACardSignatures: the SDK's agent signs its card (EdDSA, jku on its
// origin); Sluice verifies that signature, rewrites the card and signs it
// with its own key; the SDK's verifier accepts the card Sluice serves with
// the JWKS it names. A card whose signature does not verify is refused.
func TestA2ACardSignatures(t *testing.T) {
	agent := startAgent(t, "SIGN_CARD=1")
	var direct struct {
		Verified bool   `json:"verified"`
		Jku      string `json:"jku"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(a2aClient(t, "--url", agent, "--scenario", "verify-card")), &direct); err != nil || !direct.Verified {
		t.Fatalf("the agent's own signature, checked by the SDK: %+v %v", direct, err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	var refused []string
	gw := a2aGatewayWith(t, allowAll, a2a.Options{Agents: []a2a.Agent{{Name: "echo", URL: agent, RequireSignedCard: true}}, SigningKey: key,
		OnCardRefused: func(_, reason string) { refused = append(refused, reason) }})
	var via struct {
		Signatures int    `json:"signatures"`
		Verified   bool   `json:"verified"`
		Jku        string `json:"jku"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(a2aClient(t, "--url", gw+"/a2a/echo", "--scenario", "verify-card")), &via); err != nil || !via.Verified || via.Signatures != 1 || via.Jku != gw+"/a2a/.well-known/jwks.json" {
		t.Fatalf("the card through Sluice, checked by the SDK: %+v %v (refused %v)", via, err, refused)
	}
	// The SDK client still works through the signed card.
	for _, v := range []string{"1.0", "0.3"} { // the 0.3 card is the 1.0 card reshaped: its skills must match the verified one's
		if out := a2aClient(t, "--url", gw+"/a2a/echo/", "--version", v, "--scenario", "send", "--text", "signed"); !strings.Contains(out, "echo: signed") {
			t.Errorf("A2A %s send through the signed card: %s (refused %v)", v, out, refused)
		}
	}
	// Another agent's key for this card: refused, with an event.
	other := startAgent(t, "SIGN_CARD=1")
	gw2 := a2aGatewayWith(t, allowAll, a2a.Options{Agents: []a2a.Agent{{Name: "echo", URL: agent, CardKeys: other + "/.well-known/jwks.json"}}, SigningKey: key,
		OnCardRefused: func(_, reason string) { refused = append(refused, reason) }})
	resp, err := http.Get(gw2 + "/a2a/echo/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || len(refused) == 0 {
		t.Errorf("card checked against the wrong keys: %d, events %v", resp.StatusCode, refused)
	}
}

// TestA2ARestThroughGateway: the SDK client on the HTTP+JSON binding gets
// the same transcript from the agent's REST interface directly and from
// Sluice's (each REST call decided as its JSON-RPC method); a denied
// message is an HTTP error, never reaching the agent.
func TestA2ARestThroughGateway(t *testing.T) {
	agent := startAgent(t)
	gw := a2aGateway(t, allowAll, agent)
	want := a2aClient(t, "--url", agent, "--transport", "rest")
	if !strings.Contains(want, "echo: hello") {
		t.Fatalf("direct REST run: %s", want)
	}
	got := a2aClient(t, "--url", gw+"/a2a/echo/", "--transport", "rest")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("REST through Sluice differs from direct (-direct +gateway):\n%s", diff)
	}
	deny := &intercept.StaticDecider{Default: intercept.Deny, Mode: intercept.ModeThrow}
	gw2 := a2aGateway(t, deny, agent)
	out := a2aClient(t, "--url", gw2+"/a2a/echo/", "--transport", "rest", "--scenario", "send", "--text", "forbidden")
	t.Logf("denied over REST: %s", out)
	if !strings.Contains(out, "error") || strings.Contains(out, "echo: forbidden") || !strings.Contains(out, "not allowed") {
		t.Errorf("denied REST send: %s", out)
	}
	// On the wire: 403 with a google.rpc.Status body carrying the decision.
	resp, err := http.Post(gw2+"/a2a/echo/rest/message:send", "application/json",
		strings.NewReader(`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"status":"PERMISSION_DENIED"`) || !strings.Contains(string(b), "SLUICE_DECISION") {
		t.Errorf("REST deny on the wire: %d %s", resp.StatusCode, b)
	}
	// A task the caller does not own: 404 TASK_NOT_FOUND.
	resp, err = http.Get(gw + "/a2a/echo/rest/tasks/nope")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "TASK_NOT_FOUND") {
		t.Errorf("REST unknown task: %d %s", resp.StatusCode, b)
	}
}

// TestA2ARestOnlyAgent: an agent that offers only the 1.0 HTTP+JSON
// binding (no JSON-RPC endpoint at all) is served through Sluice both ways:
// the SDK client on the gateway's JSON-RPC endpoint and on its REST one
// gets the transcript the SDK client gets on the agent's REST binding
// directly; policy still decides each call; a 0.3 client is told the
// agent needs 1.0.
func TestA2ARestOnlyAgent(t *testing.T) {
	agent := startAgent(t, "REST_ONLY=1")
	gw := a2aGateway(t, allowAll, agent)
	want := a2aClient(t, "--url", agent, "--transport", "rest")
	if !strings.Contains(want, "echo: hello") {
		t.Fatalf("direct REST run: %s", want)
	}
	for _, transport := range []string{"rest", "jsonrpc"} {
		got := a2aClient(t, "--url", gw+"/a2a/echo/", "--transport", transport)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s through Sluice to a REST-only agent differs from direct REST (-direct +gateway):\n%s", transport, diff)
		}
	}
	deny := &intercept.StaticDecider{Default: intercept.Deny, Mode: intercept.ModeThrow}
	gw2 := a2aGateway(t, deny, agent)
	out := a2aClient(t, "--url", gw2+"/a2a/echo/", "--scenario", "send", "--text", "forbidden")
	if !strings.Contains(out, "not allowed") || strings.Contains(out, "echo: forbidden") {
		t.Errorf("denied send to a REST-only agent: %s", out)
	}
	resp, err := http.Post(gw+"/a2a/echo", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "A2A-Version: 1.0") {
		t.Errorf("a 0.3 send to a REST-only agent: %d %s", resp.StatusCode, b)
	}
	// An unknown task: the agent's REST 404 becomes JSON-RPC TaskNotFound.
	req, _ := http.NewRequest(http.MethodPost, gw+"/a2a/echo", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"nope"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"code":-32001`) {
		t.Errorf("GetTask of an unknown task: %s", b)
	}
}

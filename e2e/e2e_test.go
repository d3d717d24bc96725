// Package e2e runs the official MCP TypeScript SDK client against
// @modelcontextprotocol/server-everything directly and through Sluice, over
// every transport pairing, and checks that the results are the same.
//
// It needs `npm ci` in this directory; without node_modules the tests skip,
// except under CI=true where they fail.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

func requireNode(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("node_modules/@modelcontextprotocol/server-everything"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node_modules missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("node_modules missing: run `npm ci` in e2e/ to enable the end-to-end tests")
	}
}

// startServer runs server-everything in mode and returns its URL.
func startServer(t *testing.T, mode string) string {
	t.Helper()
	return startAnnounced(t, "SLUICE_E2E_READY ", "node", "serve.mjs", mode, "--port", "0")
}

// startAnnounced runs a program until the test ends and returns what
// follows prefix on the first stderr line that starts with it (its URL).
func startAnnounced(t *testing.T, prefix, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				found <- u
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v did not announce itself", name, args)
		return ""
	}
}

// runClient runs client.mjs and returns its JSON output.
func runClient(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out map[string]any
	if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
		t.Fatalf("client %v: %v; output %q; stderr:\n%s", args, err, stdout.String(), lastLines(stderr.String(), 30))
	}
	if err != nil {
		t.Logf("client %v exited with %v; stderr:\n%s", args, err, lastLines(stderr.String(), 30))
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startGateway serves ups behind Sluice with dec.
func startGateway(t *testing.T, dec intercept.Decider, ups ...gateway.Upstream) string {
	t.Helper()
	g, err := gateway.New(gateway.Options{Upstreams: ups}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

var allowAll = &intercept.StaticDecider{Default: intercept.Allow}

func TestEverythingThroughGateway(t *testing.T) {
	requireNode(t)
	httpURL := startServer(t, "streamableHttp")
	sseURL := startServer(t, "sse")
	wd, _ := os.Getwd()
	gw := startGateway(t, allowAll,
		gateway.Upstream{Name: "http", URL: httpURL},
		gateway.Upstream{Name: "sse", Transport: gateway.TransportSSE, URL: sseURL},
		gateway.Upstream{Name: "stdio", Command: "node", Args: []string{wd + "/serve.mjs", "stdio"}},
	)
	wsGW := strings.Replace(gw, "http://", "ws://", 1)

	want := runClient(t, "--transport", "streamable-http", "--url", httpURL)
	if want["ok"] != true {
		t.Fatalf("direct run failed: %v", want)
	}
	cases := []struct{ name, transport, url string }{
		{"http upstream via /mcp", "streamable-http", gw + "/mcp/http"},
		{"http upstream via /sse", "sse", gw + "/sse/http"},
		{"http upstream via /ws", "websocket", wsGW + "/ws/http"},
		{"sse upstream via /mcp", "streamable-http", gw + "/mcp/sse"},
		{"stdio upstream via /mcp", "streamable-http", gw + "/mcp/stdio"},
		{"stdio upstream via /sse", "sse", gw + "/sse/stdio"},
		{"stdio upstream via /ws", "websocket", wsGW + "/ws/stdio"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runClient(t, "--transport", tc.transport, "--url", tc.url)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("through the gateway differs from direct (-direct +gateway):\n%s", diff)
			}
		})
	}
}

func TestDenyRendering(t *testing.T) {
	requireNode(t)
	httpURL := startServer(t, "streamableHttp")
	for _, mode := range []intercept.ResultMode{intercept.ModeToolResult, intercept.ModeThrow} {
		t.Run(string(mode), func(t *testing.T) {
			gw := startGateway(t, &intercept.StaticDecider{Default: intercept.Allow, Deny: []string{"get-env"}, Mode: mode},
				gateway.Upstream{Name: "http", URL: httpURL})
			out := runClient(t, "--transport", "streamable-http", "--url", gw+"/mcp/http", "--scenario", "deny", "--tool", "get-env", "--tool-args", "{}")
			b, _ := json.Marshal(out)
			s := string(b)
			switch mode {
			case intercept.ModeToolResult:
				for _, want := range []string{`"isError":true`, `"status":"denied"`, `"code":"tool_denied"`, `"publicReason":"calling get-env is not allowed by policy"`} {
					if !strings.Contains(s, want) {
						t.Errorf("soft deny: %s lacks %s", s, want)
					}
				}
			case intercept.ModeThrow:
				for _, want := range []string{fmt.Sprint(intercept.CodePolicyDenied), `"status":"denied"`, `"txn_id"`} {
					if !strings.Contains(s, want) {
						t.Errorf("hard deny: %s lacks %s", s, want)
					}
				}
			}
			if strings.Contains(s, "PATH") {
				t.Errorf("denied tool ran: %s", s)
			}
		})
	}
}

// TestRouteRuleAcrossSessions reads a sensitive file with the real
// server-filesystem, then calls a tool classed as a network sink on
// server-everything in new sessions of the same agent: both soft-denied,
// with ADR-027's evidence in structuredContent. Another agent is not
// affected.
func TestRouteRuleAcrossSessions(t *testing.T) {
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
    files/read_file: [source:local, source:sensitive]
    everything/echo: [sink:network]
  rules:
    - id: no_writes
      match: {match_tool: files/write_file}
      decision: deny
      reason: files here are read-only
  route_rules:
    - id: no_sink_after_sensitive_source
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network, sink:external]}
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

	as := func(agent, route string, calls ...string) string {
		args := []string{"--transport", "streamable-http", "--url", srv.URL + "/mcp/" + route, "--header", "X-Agent: " + agent, "--scenario", "calls", "--list-first"}
		for _, c := range calls {
			args = append(args, "--call", c)
		}
		b, _ := json.Marshal(runClient(t, args...))
		return string(b)
	}
	if got := as("bob", "everything", `echo={"message":"before"}`); !strings.Contains(got, "Echo: before") {
		t.Fatalf("sink before any source: got %s", got)
	}
	if got := as("alice", "files", `read_text_file={"path":"`+dir+`/salaries.csv"}`); !strings.Contains(got, "alice,1") {
		t.Fatalf("reading the sensitive file: got %s", got)
	}
	for _, session := range []string{"first new session", "second new session"} {
		got := as("alice", "everything", `echo={"message":"exfil"}`)
		for _, want := range []string{`"status":"denied"`, `"isError":true`, `"matched_route_rule_id":"no_sink_after_sensitive_source"`,
			`"matched_tool_name":"echo"`, `"matched_tool_classes":["sink:network"]`, `"reason_code":"route_rule_deny"`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %s lacks %s", session, got, want)
			}
		}
		if strings.Contains(got, "Echo: exfil") {
			t.Errorf("%s: the sink ran: %s", session, got)
		}
	}
	if got := as("bob", "everything", `echo={"message":"bob"}`); !strings.Contains(got, "Echo: bob") {
		t.Errorf("another agent: got %s, want the echo", got)
	}
	// server-filesystem's tools declare an outputSchema, which the TS SDK
	// client checks structuredContent against even on an error result: its
	// soft deny carries none, and the client reads the reason.
	got := as("bob", "files", `write_file={"path":"`+dir+`/x.txt","content":"y"}`)
	if !strings.Contains(got, `"ok":true,"result"`) || !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "files here are read-only") || strings.Contains(got, "structuredContent") {
		t.Errorf("soft deny of a tool with an outputSchema: got %s, want isError and the reason, without structuredContent", got)
	}
	if _, err := os.Stat(dir + "/x.txt"); err == nil {
		t.Errorf("the denied write ran")
	}
}

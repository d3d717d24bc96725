package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// agentTap stands before the agent at base and records every request that
// reaches it (method, URI, headers, body); the card it passes on names the
// tap instead of the agent.
type agentTap struct {
	URL  string
	mu   sync.Mutex
	seen []string
}

func newAgentTap(t *testing.T, base string) *agentTap {
	t.Helper()
	target, _ := url.Parse(base)
	tap := &agentTap{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			if !strings.Contains(resp.Request.URL.Path, "/.well-known/") {
				return nil
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			b = bytes.ReplaceAll(b, []byte(base), []byte(tap.URL))
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var rec strings.Builder
		rec.WriteString(r.Method + " " + r.URL.RequestURI() + "\n")
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rec.WriteString(k + ": " + strings.Join(r.Header[k], ", ") + "\n")
		}
		rec.Write(b)
		tap.mu.Lock()
		tap.seen = append(tap.seen, rec.String())
		tap.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tap.URL = srv.URL
	return tap
}

// saw returns the first request that carried s, or "".
func (tap *agentTap) saw(s string) string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for _, x := range tap.seen {
		if strings.Contains(x, s) {
			return x
		}
	}
	return ""
}

// TestA2AFollowUpAfterRouteRule: alice started a task at the @a2a-js/sdk
// agent, then read a sensitive source; her messages to the agent are now
// denied by the route rule. Her requests about the task that carry bytes
// of her choosing (A2A 1.0 and 0.3 JSON-RPC, the HTTP+JSON binding) are
// denied by the same rule and never reach the agent; the SDK client still
// reads and cancels her task (get, cancel) in both versions and on REST.
func TestA2AFollowUpAfterRouteRule(t *testing.T) {
	tap := newAgentTap(t, startAgent(t))
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  tool_classes:
    read_document: [source:sensitive]
    a2a:echo/send: [sink:external]
  route_rules:
    - id: no_handoff_after_sensitive_read
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:external]}
      scope: agent
      reason: no handoff to an external agent after a sensitive read
`), "e2e policy", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := a2aGateway(t, p, tap.URL)
	as := []string{"--header", "X-Test-Principal: alice"}
	var sent []map[string]map[string]any
	raw := a2aClient(t, append([]string{"--url", gw + "/a2a/echo/", "--scenario", "send", "--text", "before", "--raw-ids"}, as...)...)
	json.Unmarshal([]byte(raw), &sent)
	task, _ := sent[0]["send"]["id"].(string)
	if task == "" {
		t.Fatalf("no task id in %s", raw)
	}

	ctx := context.Background()
	src := &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), Upstream: "docs", ToolName: "read_document", Agent: "alice", Parameters: jsontext.Value(`{}`)}
	if dec := intercept.Decide(ctx, p, src); dec.Verdict != intercept.Allow {
		t.Fatalf("the sensitive read: %+v", dec)
	}
	if err := p.Forwarded(ctx, src, intercept.Decision{Verdict: intercept.Allow}); err != nil {
		t.Fatal(err)
	}
	if got := a2aClient(t, append([]string{"--url", gw + "/a2a/echo/", "--scenario", "send", "--text", "SECRET-E00"}, as...)...); !strings.Contains(got, "no handoff to an external agent") {
		t.Fatalf("the handoff after the read: %s", got)
	}

	send := func(method, path, version, body string, header ...string) (int, string) {
		req, _ := http.NewRequest(method, gw+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-Principal", "alice")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, method, path, version, body, secret string
		header                                    []string
	}{
		{"1.0 GetTask historyLength", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"TASK","historyLength":707106781}}`, "707106781", nil},
		{"1.0 GetTask tenant", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"TASK","tenant":"SECRET-E02"}}`, "SECRET-E02", nil},
		{"1.0 CancelTask metadata", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"TASK","metadata":{"n":"SECRET-E03"}}}`, "SECRET-E03", nil},
		{"1.0 ListTasks contextId", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"SECRET-E04"}}`, "SECRET-E04", nil},
		{"1.0 create push config", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"TASK","url":"https://93.184.216.34/SECRET-E05"}}`, "SECRET-E05", nil},
		{"1.0 GetTask JSON-RPC id", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":"SECRET-E06","method":"GetTask","params":{"id":"TASK"}}`, "SECRET-E06", nil},
		{"1.0 GetTask A2A-Extensions", "POST", "/a2a/echo", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"TASK"}}`, "SECRET-E07", []string{"A2A-Extensions", "https://x.example/SECRET-E07"}},
		{"0.3 tasks/get unknown member", "POST", "/a2a/echo", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"TASK","note":"SECRET-E08"}}`, "SECRET-E08", nil},
		{"0.3 tasks/get historyLength", "POST", "/a2a/echo", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"TASK","historyLength":173205080}}`, "173205080", nil},
		{"0.3 push config get config id", "POST", "/a2a/echo", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"TASK","pushNotificationConfigId":"SECRET-E10"}}`, "SECRET-E10", nil},
		{"REST GetTask query", "GET", "/a2a/echo/rest/tasks/TASK?historyLength=244948974", "", "", "244948974", nil},
		{"REST ListTasks filter", "GET", "/a2a/echo/rest/tasks?contextId=SECRET-E12", "", "", "SECRET-E12", nil},
		{"REST CancelTask body", "POST", "/a2a/echo/rest/tasks/TASK:cancel", "", `{"reason":"SECRET-E13"}`, "SECRET-E13", nil},
	} {
		status, body := send(c.method, strings.ReplaceAll(c.path, "TASK", task), c.version, strings.ReplaceAll(c.body, "TASK", task), c.header...)
		if got := tap.saw(c.secret); got != "" {
			t.Errorf("%s: %s reached the agent after the route rule closed it (gateway answered %d %s):\n%s", c.name, c.secret, status, body, got)
		}
		// The JSON-RPC id is the one byte string of the caller's a plain
		// request has: the gateway sends its own and answers with hers.
		if dropped := c.secret == "SECRET-E06"; dropped != !strings.Contains(body, "no handoff") || dropped && !strings.Contains(body, `"id":"SECRET-E06"`) {
			t.Errorf("%s: got %d %s, want %s", c.name, status, body, map[bool]string{true: "her task, answered with her id", false: "the route rule's denial"}[dropped])
		}
	}
	// What a client needs of its task still works, through the SDK client.
	for _, v := range [][]string{{"--version", "1.0"}, {"--version", "0.3"}, {"--transport", "rest"}} {
		got := a2aClient(t, append(append([]string{"--url", gw + "/a2a/echo/", "--scenario", "get", "--task", task}, v...), as...)...)
		if !strings.Contains(got, "echo: before") || strings.Contains(got, `"error"`) {
			t.Errorf("%v: reading her task after the deny: %s", v, got)
		}
		// The task is done: the agent's own answer (not cancelable) is
		// what cancel gets, not a denial.
		got = a2aClient(t, append(append([]string{"--url", gw + "/a2a/echo/", "--scenario", "cancel", "--task", task}, v...), as...)...)
		t.Logf("%v: cancel after the deny: %s", v, got)
		if strings.Contains(got, "no handoff") || strings.Contains(got, "not allowed") || !strings.Contains(got, "Task not cancelable") {
			t.Errorf("%v: cancelling her task after the deny: %s", v, got)
		}
	}
	if tap.saw("SECRET-E00") != "" {
		t.Error("the denied handoff reached the agent")
	}
}

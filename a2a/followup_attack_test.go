package a2a

// Attacker review of A2A follow-up requests (everything sent to an agent
// that is not a message): after a route rule has closed the agent as a
// sink, no byte the caller chooses may reach it through a request about
// its own task. Each test here failed before followup.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// wire records, byte for byte, what reaches an agent over HTTP: the
// method, the request URI, every header and the body.
type wire struct {
	mu   sync.Mutex
	seen []string
}

func (wr *wire) tap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var rec strings.Builder
		fmt.Fprintf(&rec, "%s %s\n", r.Method, r.URL.RequestURI())
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&rec, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
		rec.Write(b)
		wr.mu.Lock()
		wr.seen = append(wr.seen, rec.String())
		wr.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}

// saw returns the first request that carried s, or "".
func (wr *wire) saw(s string) string {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for _, x := range wr.seen {
		if strings.Contains(x, s) {
			return x
		}
	}
	return ""
}

func (wr *wire) count() int {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return len(wr.seen)
}

// parkedAgent leaves every task it gets waiting for input (not terminal),
// so that it can still be cancelled.
type parkedAgent struct{}

func (parkedAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateInputRequired, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (parkedAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// v1Task is the task the 1.0 side of followUpAgent creates and answers
// about.
const v1Task = "v1-task-1"

// followUpAgent serves, behind a wire tap, a2a-go's 0.3 JSON-RPC server
// (a parkedAgent) at /rpc, a minimal A2A 1.0 JSON-RPC agent on the same
// endpoint for requests with A2A-Version 1.0, and its card (goodCard: both
// versions' JSON-RPC and 1.0 HTTP+JSON at /rest, which the gateway serves
// by translation to JSON-RPC).
func followUpAgent(t *testing.T) (*httptest.Server, *wire) {
	t.Helper()
	rpc03 := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(parkedAgent{}, a2asrv.WithTaskStore(&memTasks{m: map[a2ago.TaskID]*a2ago.Task{}})))
	wr := &wire{}
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("A2A-Version") != "1.0" {
			rpc03.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID     jsontext.Value `json:"id"`
			Method string         `json:"method"`
		}
		_ = json.Unmarshal(readAll(r), &req)
		task := `{"id":"` + v1Task + `","contextId":"v1-ctx","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`
		result := task
		switch req.Method {
		case "SendMessage":
			result = `{"task":` + task + `}`
		case "ListTasks":
			result = `{"tasks":[` + task + `]}`
		case "SubscribeToTask": // two events, each answering the request's id
			w.Header().Set("Content-Type", "text/event-stream")
			for range 2 {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":%s}}\n\n", req.ID, task)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	})
	srv = httptest.NewServer(wr.tap(mux))
	t.Cleanup(srv.Close)
	return srv, wr
}

func readAll(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// closedSinkPolicy classes the agent stub as an external sink that a
// sensitive read closes, for the reading agent, for a day.
const closedSinkPolicy = `default: allow
tool_classes:
  read_document: [source:sensitive]
  a2a:stub/send: [sink:external]
route_rules:
  - {id: no-handoff, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no handoff after a sensitive read}
`

// readSensitive has principal read a source:sensitive document (over MCP,
// as far as p is concerned).
func readSensitive(t *testing.T, p *policy.Policy, principal string) {
	t.Helper()
	ctx := context.Background()
	src := &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), Upstream: "docs", ToolName: "read_document", Agent: principal, SessionID: "s1", Parameters: jsontext.Value(`{}`)}
	if dec := intercept.Decide(ctx, p, src); dec.Verdict != intercept.Allow {
		t.Fatalf("the sensitive read: %+v", dec)
	}
	if err := p.Forwarded(ctx, src, intercept.Decision{Verdict: intercept.Allow}); err != nil {
		t.Fatal(err)
	}
}

// call sends one HTTP request to the gateway as principal and returns the
// status and body.
func call(t *testing.T, method, url, principal string, header map[string]string, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Principal", principal)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAttackFollowUpPastRouteRule: alice starts a task at an external
// agent (a2a-go's server for 0.3, a 1.0 agent beside it), then reads a
// sensitive document; the route rule now denies her messages to the
// agent. Every other request she may still send about her tasks, in
// either version, on the JSON-RPC and the HTTP+JSON binding, tries to carry
// a secret to the agent in a byte she chooses: params members the
// gateway does not read, metadata, historyLength, ListTasks filters and
// page tokens, a push config's url, token and authentication, config ids,
// the tenant, the JSON-RPC id, envelope members, the A2A-Version and
// A2A-Extensions headers, unknown methods. None may reach the agent, and
// each is refused (by the route rule, where it is decided).
func TestAttackFollowUpPastRouteRule(t *testing.T) {
	agent, wr := followUpAgent(t)
	p, err := policy.Compile([]byte(closedSinkPolicy), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := serveAs(t, p, agent.URL, Options{AllowUnknownMethods: true})
	rpc, rest := gw.URL+"/a2a/stub", gw.URL+"/a2a/stub/rest"
	v1 := map[string]string{"A2A-Version": "1.0"}

	// Before the read: a task in each version, hers.
	_, body := call(t, "POST", rpc, "alice", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`)
	var sent struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent.Result.ID == "" {
		t.Fatalf("0.3 message before the read: %s", body)
	}
	task := sent.Result.ID
	if _, body := call(t, "POST", rpc, "alice", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`); !strings.Contains(body, v1Task) {
		t.Fatalf("1.0 message before the read: %s", body)
	}

	readSensitive(t, p, "alice")
	for _, c := range []struct{ version, body string }{
		{"", `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m3","role":"user","parts":[{"kind":"text","text":"SECRET-MSG03"}]}}}`},
		{"1.0", `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"SECRET-MSG10"}]}}}`},
	} {
		h := map[string]string{"A2A-Version": c.version}
		if _, body := call(t, "POST", rpc, "alice", h, c.body); !strings.Contains(body, "no-handoff") {
			t.Fatalf("control: the message after the read was not denied by the route rule: %s", body)
		}
	}
	if got := wr.saw("SECRET-MSG"); got != "" {
		t.Fatalf("control: a denied message reached the agent:\n%s", got)
	}

	T := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "TASK", task), "V1", v1Task) }
	type attack struct {
		name, verb, url string
		header          map[string]string
		body, secret    string
	}
	rpcAttack := func(name string, header map[string]string, body, secret string) attack {
		return attack{name, "POST", rpc, header, T(body), secret}
	}
	attacks := []attack{
		// A2A 0.3, JSON-RPC (a2a-go's server).
		rpcAttack("0.3 tasks/get metadata", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK","metadata":{"n":"SECRET-A01"}}}`, "SECRET-A01"),
		rpcAttack("0.3 tasks/get unknown member", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK","note":"SECRET-A02"}}`, "SECRET-A02"),
		rpcAttack("0.3 tasks/get historyLength", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK","historyLength":718281828}}`, "718281828"),
		rpcAttack("0.3 tasks/get JSON-RPC id", nil, `{"jsonrpc":"2.0","id":"SECRET-A04","method":"tasks/get","params":{"id":"TASK"}}`, "SECRET-A04"),
		rpcAttack("0.3 tasks/get numeric JSON-RPC id", nil, `{"jsonrpc":"2.0","id":314159265,"method":"tasks/get","params":{"id":"TASK"}}`, "314159265"),
		rpcAttack("0.3 tasks/get envelope member", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK"},"note":"SECRET-A06"}`, "SECRET-A06"),
		rpcAttack("0.3 tasks/get A2A-Extensions header", map[string]string{"A2A-Extensions": "https://x.example/SECRET-A07"}, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK"}}`, "SECRET-A07"),
		rpcAttack("0.3 tasks/get A2A-Version header", map[string]string{"A2A-Version": "0.3.5772156649"}, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK"}}`, "5772156649"),
		rpcAttack("0.3 tasks/get task_id beside id", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"TASK","task_id":"TASK","x":"SECRET-A09"}}`, "SECRET-A09"),
		rpcAttack("0.3 tasks/cancel metadata", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"TASK","metadata":{"n":"SECRET-A10"}}}`, "SECRET-A10"),
		rpcAttack("0.3 tasks/cancel unknown member", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"TASK","reason":"SECRET-A11"}}`, "SECRET-A11"),
		rpcAttack("0.3 tasks/resubscribe unknown member", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/resubscribe","params":{"id":"TASK","x":"SECRET-A12"}}`, "SECRET-A12"),
		rpcAttack("0.3 push config set url", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"TASK","pushNotificationConfig":{"url":"https://93.184.216.34/SECRET-A13"}}}`, "SECRET-A13"),
		rpcAttack("0.3 push config set token", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"TASK","pushNotificationConfig":{"url":"https://93.184.216.34/hook","token":"SECRET-A14"}}}`, "SECRET-A14"),
		rpcAttack("0.3 push config set authentication", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"TASK","pushNotificationConfig":{"url":"https://93.184.216.34/hook","authentication":{"schemes":["Bearer"],"credentials":"SECRET-A15"}}}}`, "SECRET-A15"),
		rpcAttack("0.3 push config set config id", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"TASK","pushNotificationConfig":{"id":"SECRET-A16","url":"https://93.184.216.34/hook"}}}`, "SECRET-A16"),
		rpcAttack("0.3 push config get config id", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/get","params":{"id":"TASK","pushNotificationConfigId":"SECRET-A17"}}`, "SECRET-A17"),
		rpcAttack("0.3 push config list unknown member", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/list","params":{"id":"TASK","x":"SECRET-A18"}}`, "SECRET-A18"),
		rpcAttack("0.3 push config delete config id", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"TASK","pushNotificationConfigId":"SECRET-A19"}}`, "SECRET-A19"),
		rpcAttack("0.3 extended card params", nil, `{"jsonrpc":"2.0","id":3,"method":"agent/getAuthenticatedExtendedCard","params":{"x":"SECRET-A20"}}`, "SECRET-A20"),
		rpcAttack("unknown method (allow_unknown_methods)", nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/annotate","params":{"id":"TASK","note":"SECRET-A21"}}`, "SECRET-A21"),

		// A2A 1.0, JSON-RPC.
		rpcAttack("1.0 GetTask historyLength", v1, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"V1","historyLength":161803398}}`, "161803398"),
		rpcAttack("1.0 GetTask tenant", v1, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"V1","tenant":"SECRET-B02"}}`, "SECRET-B02"),
		rpcAttack("1.0 GetTask unknown member", v1, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"V1","x":"SECRET-B03"}}`, "SECRET-B03"),
		rpcAttack("1.0 GetTask JSON-RPC id", v1, `{"jsonrpc":"2.0","id":"SECRET-B04","method":"GetTask","params":{"id":"V1"}}`, "SECRET-B04"),
		rpcAttack("1.0 GetTask A2A-Version header", map[string]string{"A2A-Version": "1.0.4142135623"}, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"V1"}}`, "4142135623"),
		rpcAttack("1.0 CancelTask metadata", v1, `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"V1","metadata":{"n":"SECRET-B06"}}}`, "SECRET-B06"),
		rpcAttack("1.0 SubscribeToTask unknown member", v1, `{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":"V1","x":"SECRET-B07"}}`, "SECRET-B07"),
		rpcAttack("1.0 ListTasks contextId", v1, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"contextId":"SECRET-B08"}}`, "SECRET-B08"),
		rpcAttack("1.0 ListTasks pageToken", v1, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageToken":"SECRET-B09"}}`, "SECRET-B09"),
		rpcAttack("1.0 ListTasks pageSize", v1, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":271828}}`, "271828"),
		rpcAttack("1.0 ListTasks status timestamp", v1, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"statusTimestampAfter":"2026-01-01T00:00:00.123456789Z"}}`, "123456789"),
		rpcAttack("1.0 create push config", v1, `{"jsonrpc":"2.0","id":3,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"V1","url":"https://93.184.216.34/SECRET-B12","token":"SECRET-B12"}}`, "SECRET-B12"),
		rpcAttack("1.0 get push config id", v1, `{"jsonrpc":"2.0","id":3,"method":"GetTaskPushNotificationConfig","params":{"taskId":"V1","id":"SECRET-B13"}}`, "SECRET-B13"),
		rpcAttack("1.0 list push configs pageToken", v1, `{"jsonrpc":"2.0","id":3,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"V1","pageToken":"SECRET-B14"}}`, "SECRET-B14"),
		rpcAttack("1.0 delete push config id", v1, `{"jsonrpc":"2.0","id":3,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"V1","id":"SECRET-B15"}}`, "SECRET-B15"),
		rpcAttack("1.0 extended card params", v1, `{"jsonrpc":"2.0","id":3,"method":"GetExtendedAgentCard","params":{"x":"SECRET-B16"}}`, "SECRET-B16"),

		// A2A 1.0, HTTP+JSON (the gateway's REST binding).
		{"REST GetTask historyLength", "GET", rest + "/tasks/" + v1Task + "?historyLength=141421356", nil, "", "141421356"},
		{"REST GetTask query member", "GET", rest + "/tasks/" + v1Task + "?note=SECRET-C02", nil, "", "SECRET-C02"},
		{"REST CancelTask body", "POST", rest + "/tasks/" + v1Task + ":cancel", nil, `{"metadata":{"n":"SECRET-C03"}}`, "SECRET-C03"},
		{"REST SubscribeToTask body", "POST", rest + "/tasks/" + v1Task + ":subscribe", nil, `{"x":"SECRET-C04"}`, "SECRET-C04"},
		{"REST ListTasks filter", "GET", rest + "/tasks?contextId=SECRET-C05", nil, "", "SECRET-C05"},
		{"REST create push config", "POST", rest + "/tasks/" + v1Task + "/pushNotificationConfigs", nil, `{"url":"https://93.184.216.34/SECRET-C06"}`, "SECRET-C06"},
		{"REST get push config id", "GET", rest + "/tasks/" + v1Task + "/pushNotificationConfigs/SECRET-C07", nil, "", "SECRET-C07"},
		{"REST delete push config id", "DELETE", rest + "/tasks/" + v1Task + "/pushNotificationConfigs/SECRET-C08", nil, "", "SECRET-C08"},
		{"REST A2A-Extensions header", "GET", rest + "/tasks/" + v1Task, map[string]string{"A2A-Extensions": "https://x.example/SECRET-C09"}, "", "SECRET-C09"},
	}
	dropped := map[string]bool{"SECRET-A04": true, "314159265": true, "SECRET-A06": true, "5772156649": true, "SECRET-B04": true, "4142135623": true}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			status, body := call(t, at.verb, at.url, "alice", at.header, at.body)
			if got := wr.saw(at.secret); got != "" {
				t.Errorf("%s reached the agent after the route rule closed it (gateway answered %d %s):\n%s", at.secret, status, body, got)
			}
			// What the gateway drops when it re-encodes a plain request
			// (the JSON-RPC id, envelope members, the version's spelling)
			// is served without it; anything else is refused.
			if dropped[at.secret] {
				if status != http.StatusOK || strings.Contains(body, `"error"`) {
					t.Errorf("got %d %s, want the task (without the dropped bytes)", status, body)
				}
				return
			}
			if status < 400 && !strings.Contains(body, `"error"`) || !strings.Contains(body, "no-handoff") {
				t.Errorf("got %d %s, want the route rule's denial", status, body)
			}
		})
	}
}

// TestFollowUpPlainAfterDeny: what a client needs of its tasks after the
// route rule closed the agent still works, with a2a-go's client and on
// the wire: reading a task by its id (0.3 and 1.0, JSON-RPC and REST, the
// JS SDK's empty tenant and metadata included), cancelling it, listing
// tasks and push configs; the answer carries the client's JSON-RPC id, and
// what reaches the agent is only the method and the task id.
func TestFollowUpPlainAfterDeny(t *testing.T) {
	agent, wr := followUpAgent(t)
	p, err := policy.Compile([]byte(closedSinkPolicy), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := serveAs(t, p, agent.URL, Options{})
	rpc, rest := gw.URL+"/a2a/stub", gw.URL+"/a2a/stub/rest"
	v1 := map[string]string{"A2A-Version": "1.0"}
	c := a2aGoClient(t, gw.URL, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2ago.MessageSendParams{Message: a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: "hello"})})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2ago.Task)
	if !ok {
		t.Fatalf("answer %T, want a task", res)
	}
	if _, body := call(t, "POST", rpc, "alice", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`); !strings.Contains(body, v1Task) {
		t.Fatalf("1.0 message before the read: %s", body)
	}
	readSensitive(t, p, "alice")
	if _, err := c.SendMessage(ctx, &a2ago.MessageSendParams{Message: a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: "the secret"})}); err == nil {
		t.Fatal("the message after the read went through")
	}

	got, err := c.GetTask(ctx, &a2ago.TaskQueryParams{ID: task.ID})
	if err != nil || got.ID != task.ID || got.Status.State != a2ago.TaskStateInputRequired {
		t.Errorf("a2a-go GetTask after the deny: %+v, %v; want the task, waiting for input", got, err)
	}
	if got, err := c.CancelTask(ctx, &a2ago.TaskIDParams{ID: task.ID}); err != nil || got.Status.State != a2ago.TaskStateCanceled {
		t.Errorf("a2a-go CancelTask after the deny: %+v, %v; want it cancelled", got, err)
	}
	n := wr.count()
	for _, tc := range []struct {
		name, verb, url string
		header          map[string]string
		body, want      string
	}{
		{"0.3 tasks/get, string id", "POST", rpc, nil, `{"jsonrpc":"2.0","id":"client-7","method":"tasks/get","params":{"id":"` + string(task.ID) + `"}}`, `"id":"client-7"`},
		{"0.3 tasks/get, empty metadata", "POST", rpc, nil, `{"jsonrpc":"2.0","id":8,"method":"tasks/get","params":{"id":"` + string(task.ID) + `","metadata":{}}}`, `"id":8`},
		{"0.3 push config list", "POST", rpc, nil, `{"jsonrpc":"2.0","id":9,"method":"tasks/pushNotificationConfig/list","params":{"id":"` + string(task.ID) + `"}}`, `"id":9`},
		{"1.0 GetTask as the JS SDK sends it", "POST", rpc, v1, `{"jsonrpc":"2.0","id":10,"method":"GetTask","params":{"tenant":"","id":"` + v1Task + `"}}`, `"id":10`},
		{"1.0 CancelTask as the JS SDK sends it", "POST", rpc, v1, `{"jsonrpc":"2.0","id":11,"method":"CancelTask","params":{"tenant":"","id":"` + v1Task + `","metadata":{}}}`, `"id":11`},
		{"1.0 SubscribeToTask", "POST", rpc, v1, `{"jsonrpc":"2.0","id":12,"method":"SubscribeToTask","params":{"id":"` + v1Task + `"}}`, `"id":12`},
		{"1.0 ListTasks", "POST", rpc, v1, `{"jsonrpc":"2.0","id":13,"method":"ListTasks","params":{}}`, v1Task},
		{"1.0 list push configs", "POST", rpc, v1, `{"jsonrpc":"2.0","id":14,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"` + v1Task + `"}}`, `"id":14`},
		{"REST GetTask", "GET", rest + "/tasks/" + v1Task, nil, "", v1Task},
		{"REST CancelTask", "POST", rest + "/tasks/" + v1Task + ":cancel", nil, "", v1Task},
		{"REST ListTasks", "GET", rest + "/tasks", nil, "", v1Task},
	} {
		status, body := call(t, tc.verb, tc.url, "alice", tc.header, tc.body)
		// a2a-go's server keeps no push configs: its own error is its answer.
		agentErr := strings.Contains(body, "push notification not supported")
		if status != http.StatusOK || (strings.Contains(body, `"error"`) && !agentErr) || !strings.Contains(body, tc.want) {
			t.Errorf("%s after the deny: got %d %s, want the agent's answer with %s", tc.name, status, body, tc.want)
		}
		if strings.HasPrefix(body, "data:") && strings.Count(body, tc.want) != 2 {
			t.Errorf("%s after the deny: got %s, want both events with %s", tc.name, body, tc.want)
		}
		if wr.count() != n+1 {
			t.Errorf("%s: %d requests reached the agent, want 1", tc.name, wr.count()-n)
		}
		n = wr.count()
	}
	// What reached the agent of those is the method and the task id.
	if got := wr.saw("client-7"); got != "" {
		t.Errorf("the client's JSON-RPC id reached the agent:\n%s", got)
	}
}

// TestFollowUpDecidedWhileOpen: while no route rule closes the agent, a
// follow-up carrying data of the caller's (historyLength, metadata) is
// decided as the message it amounts to — tool send of the agent, its
// method and params the arguments — and forwarded as sent once allowed;
// one whose decision fails (a decider error) is refused with the reason,
// never forwarded.
func TestFollowUpDecidedWhileOpen(t *testing.T) {
	agent, wr := followUpAgent(t)
	var mu sync.Mutex
	var decided []*intercept.ActionDescriptor
	failing := false
	dec := intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		decided = append(decided, d)
		if failing && !strings.Contains(string(d.Parameters), "message") {
			return intercept.Decision{}, errors.New("route memory unreachable")
		}
		return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
	})
	gw := serveAs(t, dec, agent.URL, Options{})
	rpc := gw.URL + "/a2a/stub"
	_, body := call(t, "POST", rpc, "alice", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`)
	var sent struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent.Result.ID == "" {
		t.Fatalf("message: %s", body)
	}
	req := `{"jsonrpc":"2.0","id":"c2","method":"tasks/get","params":{"id":"` + sent.Result.ID + `","historyLength":5,"metadata":{"trace":"T-OPEN"}}}`
	if _, body := call(t, "POST", rpc, "alice", nil, req); strings.Contains(body, `"error"`) || !strings.Contains(body, sent.Result.ID) {
		t.Fatalf("a follow-up with data while the agent is open: %s", body)
	}
	if wr.saw(`"historyLength":5`) == "" || wr.saw("T-OPEN") == "" {
		t.Errorf("the allowed follow-up did not reach the agent as sent")
	}
	mu.Lock()
	last := decided[len(decided)-1]
	mu.Unlock()
	if last.ToolName != "send" || last.Upstream != "a2a:stub" || !strings.Contains(string(last.Parameters), `"method":"tasks/get"`) || !strings.Contains(string(last.Parameters), "T-OPEN") {
		t.Errorf("the follow-up was decided as %s/%s %s, want a2a:stub/send with its method and params", last.Upstream, last.ToolName, last.Parameters)
	}
	// Fail closed.
	mu.Lock()
	failing = true
	mu.Unlock()
	n := wr.count()
	_, body = call(t, "POST", rpc, "alice", nil, strings.ReplaceAll(req, "T-OPEN", "T-FAIL"))
	if wr.count() != n || !strings.Contains(body, `"code":-32090`) || !strings.Contains(body, intercept.ReasonPolicyError) {
		t.Errorf("a follow-up whose decision failed: got %s (%d requests reached the agent), want -32090 %s and none", body, wr.count()-n, intercept.ReasonPolicyError)
	}
	// A plain one is not decided at all: polling is not an action.
	mu.Lock()
	before := len(decided)
	mu.Unlock()
	if _, body := call(t, "POST", rpc, "alice", nil, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"`+sent.Result.ID+`"}}`); strings.Contains(body, `"error"`) {
		t.Errorf("a plain tasks/get while decisions fail: %s", body)
	}
	mu.Lock()
	after := len(decided)
	mu.Unlock()
	if after != before {
		t.Errorf("a plain tasks/get was decided (%d decisions), want none", after-before)
	}
}

// restOnlyCard offers only the 1.0 HTTP+JSON binding: the gateway sends
// each JSON-RPC call as its REST request (restupstream.go).
const restOnlyCard = `{"name":"stub","skills":[{"id":"echo","description":"Echo."}],
"supportedInterfaces":[{"url":"BASE/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}]}`

// TestAttackFollowUpRestOnlyAgent: to an agent that offers only HTTP+JSON
// the caller's bytes would travel in the path (the tenant), the query
// (historyLength, ListTasks filters) or the body; after the route rule
// closed the agent none does, and a plain GetTask still reads the task.
func TestAttackFollowUpRestOnlyAgent(t *testing.T) {
	wr := &wire{}
	var srv *httptest.Server
	srv = httptest.NewServer(wr.tap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/.well-known/") {
			io.WriteString(w, strings.ReplaceAll(restOnlyCard, "BASE", srv.URL))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		task := `{"id":"` + v1Task + `","contextId":"v1-ctx","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`
		if strings.HasSuffix(r.URL.Path, "/message:send") {
			io.WriteString(w, `{"task":`+task+`}`)
			return
		}
		io.WriteString(w, task)
	})))
	t.Cleanup(srv.Close)
	p, err := policy.Compile([]byte(closedSinkPolicy), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := serveAs(t, p, srv.URL, Options{})
	rpc, v1 := gw.URL+"/a2a/stub", map[string]string{"A2A-Version": "1.0"}
	if _, body := call(t, "POST", rpc, "alice", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`); !strings.Contains(body, v1Task) {
		t.Fatalf("message before the read: %s", body)
	}
	readSensitive(t, p, "alice")
	for _, c := range []struct{ name, params, secret string }{
		{"tenant in the path", `{"id":"` + v1Task + `","tenant":"SECRET-D01"}`, "SECRET-D01"},
		{"historyLength in the query", `{"id":"` + v1Task + `","historyLength":223606797}`, "223606797"},
		{"unknown member", `{"id":"` + v1Task + `","x":"SECRET-D03"}`, "SECRET-D03"},
	} {
		_, body := call(t, "POST", rpc, "alice", v1, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":`+c.params+`}`)
		if got := wr.saw(c.secret); got != "" || !strings.Contains(body, "no-handoff") {
			t.Errorf("%s: the gateway answered %s, want the route rule's denial; the agent got:\n%s", c.name, body, got)
		}
	}
	n := wr.count()
	if _, body := call(t, "POST", rpc, "alice", v1, `{"jsonrpc":"2.0","id":"mine","method":"GetTask","params":{"id":"`+v1Task+`","tenant":""}}`); !strings.Contains(body, `"id":"mine"`) || !strings.Contains(body, v1Task) || strings.Contains(body, `"error"`) {
		t.Errorf("a plain GetTask after the deny: %s", body)
	}
	if wr.count() != n+1 || wr.saw("GET /rest/tasks/"+v1Task+"\n") == "" {
		t.Errorf("a plain GetTask did not reach the agent as GET /rest/tasks/%s", v1Task)
	}
}

// TestAttackRejectedTaskIDs: a soft deny hands the caller a task the
// agent never saw, as many as it sends denied messages; naming one of a
// thousand in a tasks/get would carry ten bits a request. Such a task is
// answered "not found" by the gateway, and never named to the agent.
func TestAttackRejectedTaskIDs(t *testing.T) {
	agent, wr := followUpAgent(t)
	p, err := policy.Compile([]byte("result_mode: tool_result\n"+closedSinkPolicy), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := serveAs(t, p, agent.URL, Options{})
	readSensitive(t, p, "alice")
	_, body := call(t, "POST", gw.URL+"/a2a/stub", "alice", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"bit 1"}]}}}`)
	var rejected struct {
		Result struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &rejected); err != nil || rejected.Result.Status.State != "rejected" {
		t.Fatalf("the soft deny: %s", body)
	}
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + rejected.Result.ID + `"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"` + rejected.Result.ID + `"}}`,
	} {
		_, body := call(t, "POST", gw.URL+"/a2a/stub", "alice", nil, req)
		if got := wr.saw(rejected.Result.ID); got != "" || !strings.Contains(body, `"code":-32001`) {
			t.Errorf("%s: the gateway answered %s, want task not found; the agent got:\n%s", req, body, got)
		}
	}
}

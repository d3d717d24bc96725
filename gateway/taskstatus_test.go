package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// An upstream's notifications/tasks/status is its task's creator's alone:
// mcp-go sends one of every task to every session with a GET stream, and
// the gateway must not pass alice's on to bob (status and status message
// are hers), while alice still gets hers.
func TestTaskStatusOnlyToOwner(t *testing.T) {
	// setup serves a task tool that finishes when release is closed;
	// marker sends every session a notification to read up to.
	var metrics http.Handler // the gateway's /metrics
	setup := func(t *testing.T) (u string, release chan struct{}, marker func(), g *Gateway) {
		release = make(chan struct{})
		s := server.NewMCPServer("taskserver", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
		s.AddTool(mcp.NewTool("slow_secret", mcp.WithTaskSupport(mcp.TaskSupportOptional)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// Not on ctx: mcp-go ends it with the POST that started the
				// task, whose stream would then take alice's status.
				untilReleased(t, release)
				return mcp.NewToolResultText("alice's secret is 42"), nil
			})
		up := httptest.NewServer(server.NewStreamableHTTPServer(s))
		t.Cleanup(up.Close)
		tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
		if err != nil {
			t.Fatal(err)
		}
		metrics = tp.MetricsHandler()
		g, err = New(Options{Upstreams: []Upstream{{Name: "tasks", URL: up.URL + "/mcp"}}, Metrics: tp.Metrics()},
			&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"slow_secret"}}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		marker = func() {
			s.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "marker"})
		}
		return principalGateway(t, g).URL + "/mcp/tasks", release, marker, g
	}
	open := func(t *testing.T, u, who string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": who}
		_, rh, body := post(t, u, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"c","version":"1"}}}`)
		if rh.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %s", body)
		}
		h["Mcp-Session-Id"] = rh.Get("Mcp-Session-Id")
		post(t, u, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return h
	}
	createTask := func(t *testing.T, u string, alice map[string]string) string {
		_, _, body := post(t, u, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_secret","arguments":{},"task":{}}}`)
		task := regexp.MustCompile(`"taskId":"([^"]+)"`).FindStringSubmatch(body)
		if task == nil {
			t.Fatalf("alice's task: %s", body)
		}
		return task[1]
	}
	status := func(body, task string) bool {
		return strings.Contains(body, "notifications/tasks/status") && strings.Contains(body, task)
	}

	t.Run("GET stream", func(t *testing.T) {
		u, release, marker, g := setup(t)
		alice, bob := open(t, u, "alice"), open(t, u, "bob")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream := func(h map[string]string) *transport.SSEReader { return openGetStream(ctx, t, u, h) }
		aliceGet, bobGet := stream(alice), stream(bob)
		task := createTask(t, u, alice)
		close(release)
		for {
			ev, err := aliceGet.Next()
			if err != nil {
				t.Fatalf("alice's GET stream ended before her task's status: %v", err)
			}
			if status(string(ev.Data), task) {
				break
			}
		}
		marker()
		for {
			ev, err := bobGet.Next()
			if err != nil {
				t.Fatalf("bob's GET stream ended before the marker: %v", err)
			}
			if strings.Contains(string(ev.Data), task) {
				t.Fatalf("bob got alice's task status: %s", ev.Data)
			}
			if strings.Contains(string(ev.Data), "marker") {
				break
			}
		}
		if got := g.TasksWithheld(); got != 1 {
			t.Errorf("TasksWithheld = %d, want 1", got)
		}
		rec := httptest.NewRecorder()
		metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if !regexp.MustCompile(`sluice_messages_withheld_total\{[^}]*reason="foreign_task"[^}]*\} 1\b`).MatchString(rec.Body.String()) {
			t.Errorf("/metrics does not count the withheld status:\n%.3000s", rec.Body.String())
		}
	})
}

// In what an upstream sends a client (a POST's answer, a stream's event,
// a /ws or /sse message), a message about another's task is left out and
// the rest of a batch kept; a task a response of the same batch creates
// is the client's already.
func TestTaskMessagesWithheld(t *testing.T) {
	ic := &intercept.Interceptor{}
	w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
	alice := intercept.CallContext{Upstream: "tasks", Agent: "alice"}
	bob := intercept.CallContext{Upstream: "tasks", Agent: "bob"}
	ic.ObserveTask(context.Background(), alice, []byte(`{"task":{"taskId":"t1"}}`))
	methodOf := func(id string) (string, string) {
		if id == "9" {
			return "tools/call", ""
		}
		return "", ""
	}
	status := `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"completed","statusMessage":"alice's"}}`
	related := `{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"m","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}}`
	ping := `{"jsonrpc":"2.0","id":1,"result":{}}`
	for _, c := range []struct {
		name string
		cc   intercept.CallContext
		in   string
		want string
	}{
		{"owner's status", alice, status, status},
		{"another's status", bob, status, ""},
		{"another's related request", bob, related, ""},
		{"batch", bob, "[" + status + "," + ping + "]", "[" + ping + "]"},
		{"unseen task", alice, strings.Replace(status, "t1", "t2", 1), ""},
		{"taskId not a string", alice, strings.Replace(status, `"t1"`, `1`, 1), ""},
		{"created in the same batch", bob, "[" + `{"jsonrpc":"2.0","id":9,"result":{"task":{"taskId":"t3"}}}` + "," + strings.Replace(status, "t1", "t3", 1) + "]",
			"[" + `{"jsonrpc":"2.0","id":9,"result":{"task":{"taskId":"t3"}}}` + "," + strings.Replace(status, "t1", "t3", 1) + "]"},
		// Go's encoding/json (mcp-go's and the go-sdk's clients) reads
		// "TaskId" as taskId, and the related-task meta's name and
		// members likewise: a case variant names a task too.
		{"another's status under TaskId", bob, strings.Replace(status, `"taskId"`, `"TaskId"`, 1), ""},
		{"another's status under TASKID", bob, strings.Replace(status, `"taskId"`, `"TASKID"`, 1), ""},
		{"another's status under ta\u017fkId", bob, strings.Replace(status, `"taskId"`, "\"ta\u017fkId\"", 1), ""},
		{"another's related request under TaskId", bob, strings.Replace(related, `"taskId"`, `"TaskId"`, 1), ""},
		{"owner's status under TaskId", alice, strings.Replace(status, `"taskId"`, `"TaskId"`, 1), ""},
		// What the gateway cannot read is not passed on as unscreened:
		// every reader takes one of the two (Go's encoding/json and
		// JavaScript the last).
		{"another's status under a duplicate taskId", bob, strings.Replace(status, `"taskId":"t1"`, `"taskId":"t9","taskId":"t1"`, 1), ""},
		{"server's tasks/get names the client's task", bob, `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"c1"}}`, `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"c1"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(hideTools(context.Background(), ic, w, c.cc, []byte(c.in), methodOf, nil, nil, nil)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// The quick look before a message from an upstream is decoded and
// screened finds taskId in any case: a status under "TaskId" skipped it,
// and reached bob unscreened on every transport.
func TestRecordedFindsTaskIDInAnyCase(t *testing.T) {
	for _, b := range []string{
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"TaskId":"t1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"TASKID":"t1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"task\u0049d":"t1"}}`,
		`"taskid"`,
		// Go's encoding/json folds as bytes.EqualFold: the long s and the
		// Kelvin sign are s and k to it.
		"{\"params\":{\"ta\u017fkId\":\"t1\"}}",
		"{\"params\":{\"tas\u212aId\":\"t1\"}}",
	} {
		if !recorded([]byte(b)) {
			t.Errorf("recorded(%s) = false, want true", b)
		}
	}
	for _, b := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `"taskI"`, `taskId`} {
		if recorded([]byte(b)) {
			t.Errorf("recorded(%s) = true, want false", b)
		}
	}
}

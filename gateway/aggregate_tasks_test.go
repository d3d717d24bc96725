package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// taskUpstream serves an mcp-go server with tasks (list, cancel and
// task-augmented tools/call) and one task tool, read_secret, whose result
// names the upstream and its owner argument; with release set, a call
// finishes only once release is closed. It returns the server and its URL.
func taskUpstream(t *testing.T, name string, release chan struct{}, opts ...server.ServerOption) (*server.MCPServer, string) {
	t.Helper()
	s := server.NewMCPServer(name, "1.0.0", append([]server.ServerOption{server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true)}, opts...)...)
	s.AddTool(mcp.NewTool("read_secret", mcp.WithString("owner"), mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if release != nil {
				untilReleased(t, release) // not ctx: mcp-go ends it with the POST that started the task
			}
			return mcp.NewToolResultText(name + ": the secret of " + req.GetString("owner", "") + " is 42"), nil
		})
	up := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(up.Close)
	return s, up.URL + "/mcp"
}

// vtaskGateway serves ups behind the virtual server /mcp, authenticating
// by X-Test-Principal; dec, if not nil, sees every decision.
func vtaskGateway(t *testing.T, dec *calls, ups ...Upstream) string {
	t.Helper()
	if dec == nil {
		dec = &calls{}
	}
	dec.next = &intercept.StaticDecider{Default: intercept.Allow}
	g, err := New(Options{Upstreams: ups, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return principalGateway(t, g).URL + "/mcp"
}

// vopen opens a 2025-11-25 session of the virtual server u for principal
// who and returns its headers and the initialize answer.
func vopen(t *testing.T, u, who string) (map[string]string, string) {
	t.Helper()
	h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": who}
	_, rh, body := post(t, u, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	if rh.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s", body)
	}
	h["Mcp-Session-Id"] = rh.Get("Mcp-Session-Id")
	post(t, u, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h, body
}

var taskIDOf = regexp.MustCompile(`"taskId":"([^"]+)"`)

// vtask calls tool as a task on session h of u and returns the task id
// its handle names.
func vtask(t *testing.T, u string, h map[string]string, tool, owner string) string {
	t.Helper()
	_, _, body := post(t, u, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"owner":"`+owner+`"},"task":{}}}`)
	id := taskIDOf.FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("%s as a task: %s", tool, body)
	}
	return id[1]
}

// TestVirtualTasks: through /mcp, a task-augmented tools/call on either of
// two tasks-capable mcp-go upstreams answers a handle whose id names the
// upstream; policy sees the real upstream and tool; tasks/get, tasks/result
// and tasks/list reach the task for its owner and no one else; an id is
// never taken to another upstream than the one it names; the virtual
// server declares tasks because its upstreams do.
func TestVirtualTasks(t *testing.T) {
	_, one := taskUpstream(t, "one", nil, server.WithPaginationLimit(1))
	_, two := taskUpstream(t, "two", nil)
	dec := &calls{}
	u := vtaskGateway(t, dec, Upstream{Name: "one", URL: one}, Upstream{Name: "two", URL: two})

	t.Run("2025-11-25", func(t *testing.T) {
		alice, init := vopen(t, u, "alice")
		if !strings.Contains(init, `"tasks":{`) {
			t.Errorf("initialize does not declare tasks: %s", init)
		}
		bob, _ := vopen(t, u, "bob")
		t1 := vtask(t, u, alice, "read_secret", "alice")
		if got := dec.last(); got != "one/read_secret" {
			t.Errorf("policy saw %q, want one/read_secret", got)
		}
		t1b := vtask(t, u, alice, "read_secret", "alice again") // a second page of one's tasks/list
		t2 := vtask(t, u, alice, "two_read_secret", "alice")
		if got := dec.last(); got != "two/read_secret" {
			t.Errorf("policy saw %q, want two/read_secret", got)
		}
		raw1, ok1 := strings.CutPrefix(t1, "one/")
		raw2, ok2 := strings.CutPrefix(t2, "two/")
		if !ok1 || !ok2 {
			t.Fatalf("task ids %q, %q do not name their upstreams", t1, t2)
		}
		for _, c := range []struct{ id, want string }{{t1, "one: the secret of alice is 42"}, {t2, "two: the secret of alice is 42"}} {
			if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+c.id+`"}}`); !strings.Contains(got, `"taskId":"`+c.id+`"`) || strings.Contains(got, `"error"`) {
				t.Errorf("alice's tasks/get %s: %s", c.id, got)
			}
			if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+c.id+`"}}`); !strings.Contains(got, c.want) {
				t.Errorf("alice's tasks/result %s: %s, want %q", c.id, got, c.want)
			}
		}
		_, _, list := post(t, u, alice, `{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`)
		for _, id := range []string{t1, t1b, t2} {
			if !strings.Contains(list, `"taskId":"`+id+`"`) {
				t.Errorf("alice's tasks/list lacks %s: %s", id, list)
			}
		}
		if strings.Contains(list, `"taskId":"`+raw1+`"`) || strings.Contains(list, "nextCursor") {
			t.Errorf("alice's tasks/list shows an upstream's own id or a cursor: %s", list)
		}

		// Bob guesses alice's ids; alice names one upstream's id on the other.
		for _, c := range []struct {
			who map[string]string
			id  string
		}{{bob, t1}, {bob, t2}, {bob, raw1}, {alice, "two/" + raw1}, {alice, "one/" + raw2}, {alice, raw1}, {alice, "three/" + raw1}, {alice, ""}} {
			for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				_, _, got := post(t, u, c.who, `{"jsonrpc":"2.0","id":5,"method":"`+method+`","params":{"taskId":"`+c.id+`"}}`)
				if !strings.Contains(got, `"error"`) || strings.Contains(got, "is 42") || strings.Contains(got, "does not offer") {
					t.Errorf("%s %s by %s: %s, want an error", method, c.id, c.who["X-Test-Principal"], got)
				}
			}
		}
		if _, _, got := post(t, u, alice, `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"`+t1+`","TaskId":"`+t2+`"}}`); !strings.Contains(got, "-32602") {
			t.Errorf("tasks/get with taskId and TaskId: %s, want -32602", got)
		}
		if _, _, got := post(t, u, bob, `{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{}}`); strings.Contains(got, raw1) || strings.Contains(got, raw2) || !strings.Contains(got, `"tasks":[]`) {
			t.Errorf("bob's tasks/list: %s", got)
		}
	})

	t.Run("2026-07-28", func(t *testing.T) {
		meta := func(who string) string {
			return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + who + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		}
		as := func(who string, h map[string]string) map[string]string { h["X-Test-Principal"] = who; return h }
		_, _, disc := post(t, u, as("alice", modernHeaders("server/discover", "")), `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{`+meta("alice")+`}}`)
		if !strings.Contains(disc, `"tasks":{`) || !strings.Contains(disc, `"2026-07-28"`) {
			t.Fatalf("server/discover: %s", disc)
		}
		_, _, body := post(t, u, as("alice", modernHeaders("tools/call", "two_read_secret")),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"two_read_secret","arguments":{"owner":"alice"},"task":{},`+meta("alice")+`}}`)
		task := taskIDOf.FindStringSubmatch(body)
		if task == nil || !strings.HasPrefix(task[1], "two/") {
			t.Fatalf("alice's task: %s", body)
		}
		_, _, got := post(t, u, as("bob", modernHeaders("tasks/get", task[1])), `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta("bob")+`}}`)
		if !strings.Contains(got, "task not found") {
			t.Errorf("bob's tasks/get on alice's task: %s", got)
		}
		_, _, got = post(t, u, as("alice", modernHeaders("tasks/get", task[1])), `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta("alice")+`}}`)
		if !strings.Contains(got, `"taskId":"`+task[1]+`"`) || strings.Contains(got, `"error"`) {
			t.Errorf("alice's own tasks/get: %s", got)
		}
		if code, _, got := post(t, u, as("alice", modernHeaders("tasks/get", "one/x")), `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"`+task[1]+`",`+meta("alice")+`}}`); code != http.StatusBadRequest {
			t.Errorf("tasks/get whose Mcp-Name is another task: %d %s", code, got)
		}
	})
}

// TestVirtualTasksNotDeclared: a virtual server whose upstreams have no
// tasks does not declare them.
func TestVirtualTasksNotDeclared(t *testing.T) {
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}})
	_, _, body := post(t, f.url+"/mcp", nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if !strings.Contains(body, `"capabilities"`) || strings.Contains(body, `"tasks"`) {
		t.Errorf("initialize: %s", body)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	_, _, body = post(t, f.url+"/mcp", modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if !strings.Contains(body, `"capabilities"`) || strings.Contains(body, `"tasks"`) {
		t.Errorf("server/discover: %s", body)
	}
}

// TestAttackVirtualTaskIDs: a hostile upstream ("evil") hands bob handles
// whose ids are alice's task on another upstream ("one"), bare or spelt as
// the virtual server spells one's; and lists them. Neither reaches one: each
// id evil hands out names evil, and alice's own list shows nothing of evil.
func TestAttackVirtualTaskIDs(t *testing.T) {
	_, one := taskUpstream(t, "one", nil)
	var mu sync.Mutex
	var handed []string // the ids evil hands out, in turn
	var asked []string  // the task ids evil was asked about
	evil := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
		w.Header().Set("Content-Type", "application/json")
		reply := func(result string) { io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`) }
		mu.Lock()
		defer mu.Unlock()
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "evil-session")
			reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"evil","version":"1"}}`)
		case "tools/list":
			reply(`{"tools":[{"name":"lure","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}`)
		case "tools/call":
			id := handed[0]
			handed = handed[1:]
			reply(`{"task":{"taskId":"` + id + `","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null}}`)
		case "tasks/get", "tasks/result", "tasks/cancel":
			id := intercept.StringMember(m.Params, "taskId")
			asked = append(asked, id)
			reply(`{"content":[{"type":"text","text":"evil's answer about ` + id + `"}],"taskId":"` + id + `","status":"completed"}`)
		case "tasks/list":
			var tasks []string
			for _, id := range append(asked, handed...) {
				tasks = append(tasks, `{"taskId":"`+id+`","status":"completed"}`)
			}
			reply(`{"tasks":[` + strings.Join(tasks, ",") + `]}`)
		default:
			reply(`{}`)
		}
	}))
	t.Cleanup(evil.Close)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: one}, Upstream{Name: "evil", URL: evil.URL})

	alice, _ := vopen(t, u, "alice")
	bob, _ := vopen(t, u, "bob")
	t1 := vtask(t, u, alice, "read_secret", "alice")
	raw := strings.TrimPrefix(t1, "one/")
	mu.Lock()
	handed = []string{raw, t1, "../one/" + raw}
	mu.Unlock()
	for range 3 {
		id := vtask(t, u, bob, "lure", "bob")
		if !strings.HasPrefix(id, "evil/") {
			t.Errorf("evil's handle became %q, which does not name evil", id)
		}
		for _, method := range []string{"tasks/get", "tasks/result"} {
			_, _, got := post(t, u, bob, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"taskId":"`+id+`"}}`)
			if strings.Contains(got, "is 42") || !strings.Contains(got, "evil's answer") {
				t.Errorf("bob's %s %s: %s, want evil's answer", method, id, got)
			}
		}
	}
	if _, _, got := post(t, u, bob, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+t1+`"}}`); strings.Contains(got, "is 42") || !strings.Contains(got, "task not found") {
		t.Errorf("bob's tasks/result on alice's task: %s", got)
	}
	_, _, list := post(t, u, alice, `{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`)
	if !strings.Contains(list, `"taskId":"`+t1+`"`) || strings.Contains(list, "evil/") {
		t.Errorf("alice's tasks/list: %s, want her task on one and nothing of evil's", list)
	}
	_, _, list = post(t, u, bob, `{"jsonrpc":"2.0","id":5,"method":"tasks/list","params":{}}`)
	if strings.Contains(list, `"taskId":"`+t1+`"`) || !strings.Contains(list, `"taskId":"evil/`+t1+`"`) {
		t.Errorf("bob's tasks/list: %s, want evil's tasks only, as evil's", list)
	}
}

// TestVirtualTaskStatusOnlyToOwner: an upstream's notifications/tasks/status
// (mcp-go sends each to every session's GET stream) reaches the GET stream
// of the virtual session that owns the task, with the task's id as that
// client knows it, and no other.
func TestVirtualTaskStatusOnlyToOwner(t *testing.T) {
	release := make(chan struct{})
	s1, one := taskUpstream(t, "one", release)
	_, two := taskUpstream(t, "two", nil)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: one}, Upstream{Name: "two", URL: two})
	alice, _ := vopen(t, u, "alice")
	bob, _ := vopen(t, u, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stream := func(h map[string]string) *transport.SSEReader { return openGetStream(ctx, t, u, h) }
	// until reads rd up to an event holding want, failing on one holding bad.
	until := func(who string, rd *transport.SSEReader, want, bad string) {
		t.Helper()
		for {
			ev, err := rd.Next()
			if err != nil {
				t.Fatalf("%s's GET stream ended before %q: %v", who, want, err)
			}
			if bad != "" && strings.Contains(string(ev.Data), bad) {
				t.Fatalf("%s got %s", who, ev.Data)
			}
			if strings.Contains(string(ev.Data), want) {
				return
			}
		}
	}
	aliceGet, bobGet := stream(alice), stream(bob)
	// Both streams reach one's GET stream before the task starts.
	stopMarkers := sendMarkers(s1)
	until("alice", aliceGet, "tools/list_changed", "")
	until("bob", bobGet, "tools/list_changed", "")
	stopMarkers()

	task := vtask(t, u, alice, "read_secret", "alice")
	raw := strings.TrimPrefix(task, "one/")
	close(release)
	until("alice", aliceGet, `"taskId":"`+task+`"`, `"taskId":"`+raw+`"`)
	time.Sleep(100 * time.Millisecond) // the status went to bob's inner stream too
	s1.SendNotificationToAllClients("notifications/prompts/list_changed", nil)
	until("bob", bobGet, "prompts/list_changed", raw)
}

// TestVirtualTaskIDsOut: every task id an upstream sends the client names
// the upstream, in each shape MCP carries one (2025-11-25's and
// 2026-07-28's handles, a task, tasks/list, a related task); a request's
// own taskId (a task the client runs) is left as it is.
func TestVirtualTaskIDsOut(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"task":{"taskId":"7","status":"working"}}`, `{"task":{"taskId":"u/7","status":"working"}}`},
		{`{"resultType":"task","taskId":"7"}`, `{"resultType":"task","taskId":"u/7"}`},
		{`{"tasks":[{"taskId":"7"},{"taskId":"two/8"},{"taskId":9}],"nextCursor":"c"}`, `{"tasks":[{"taskId":"u/7"},{"taskId":"u/two/8"},{"taskId":9}],"nextCursor":"c"}`},
		{`{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"7"}}}`, `{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u/7"}}}`},
		{`{"content":[{"type":"text","text":"no task"}]}`, `{"content":[{"type":"text","text":"no task"}]}`},
	} {
		if got := string(taskIDsOut("u", jsontext.Value(c.in))); got != c.want {
			t.Errorf("taskIDsOut(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"7","status":"completed"}}`,
			`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"u/7","status":"completed"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"c1"}}`, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"c1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"?","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"7"}}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"?","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u/7"}}}}`},
	} {
		if got := string(taskMessageOut("u", []byte(c.in))); got != c.want {
			t.Errorf("taskMessageOut(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestAttackVirtualRelatedTaskOnGETStream: a notification an upstream
// sends on its GET stream about a task (a related-task _meta) names the
// task as the client knows it, {upstream}/{id}, as the same notification
// on a call's answer does. Before, the virtual server passed the GET
// stream's notifications as the upstream wrote them: the client got an id
// it never had, and an upstream that names its task "two/…" made its log
// message read as being about a task of the upstream two.
func TestAttackVirtualRelatedTaskOnGETStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var mu sync.Mutex
	var sessions []server.ClientSession // one's, to send a _meta mcp-go's SendNotification* drops
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		mu.Lock()
		defer mu.Unlock()
		sessions = append(sessions, cs)
	})
	s1, one := taskUpstream(t, "one", release, server.WithHooks(hooks))
	_, two := taskUpstream(t, "two", nil)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: one}, Upstream{Name: "two", URL: two})
	alice, _ := vopen(t, u, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rd := openGetStream(ctx, t, u, alice)
	until := func(want string) string {
		t.Helper()
		for {
			ev, err := rd.Next()
			if err != nil {
				t.Fatalf("the GET stream ended before %q: %v", want, err)
			}
			if strings.Contains(string(ev.Data), want) {
				return string(ev.Data)
			}
		}
	}
	// The virtual server's GET stream on one is open once a marker comes.
	stopMarkers := sendMarkers(s1)
	until("tools/list_changed")
	stopMarkers()

	task := vtask(t, u, alice, "read_secret", "alice")
	raw := strings.TrimPrefix(task, "one/")
	mu.Lock()
	for _, cs := range sessions {
		select {
		case cs.NotificationChannel() <- mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: "notifications/message",
			Params: mcp.NotificationParams{
				Meta:             map[string]any{relatedTaskMeta: map[string]any{"taskId": raw}},
				AdditionalFields: map[string]any{"level": "info", "data": "about the task"},
			},
		}}:
		default:
		}
	}
	mu.Unlock()
	got := until("about the task")
	if strings.Contains(got, `"taskId":"`+raw+`"`) || !strings.Contains(got, `"taskId":"`+task+`"`) {
		t.Errorf("got %s, want its related task named %q", got, task)
	}
}

// escapingWriter writes what an mcp-go server answers with every
// "taskId" member name spelled with an escape ("task\u0049d"), as a
// hostile upstream may: the same name to any JSON reader.
type escapingWriter struct{ http.ResponseWriter }

func (w escapingWriter) WriteHeader(code int) {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
}

func (w escapingWriter) Write(b []byte) (int, error) {
	_, err := w.ResponseWriter.Write(bytes.ReplaceAll(b, []byte(`"taskId"`), []byte(`"task\u0049d"`)))
	return len(b), err
}

func (w escapingWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// TestAttackVirtualEscapedTaskID: a task id an upstream writes under an
// escaped member name ("task\u0049d", which every JSON reader reads as
// taskId) still reaches the client as {upstream}/{id}, and the task's
// status still reaches its owner only. Before, the virtual server, and
// the route screening an upstream's messages, looked for the bytes
// "taskId" first: the handle went as the upstream wrote it (an id naming
// no upstream; an upstream naming its task "two/…" sent the client's
// tasks/get and tasks/result for it to the upstream two), and mcp-go's
// status of alice's task, sent to every session, reached bob.
func TestAttackVirtualEscapedTaskID(t *testing.T) {
	release := make(chan struct{})
	s := server.NewMCPServer("one", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("read_secret", mcp.WithString("owner"), mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			untilReleased(t, release)
			return mcp.NewToolResultText("42"), nil
		})
	h := server.NewStreamableHTTPServer(s)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(escapingWriter{w}, r) }))
	t.Cleanup(up.Close)
	_, two := taskUpstream(t, "two", nil)
	u := vtaskGateway(t, nil, Upstream{Name: "one", URL: up.URL + "/mcp"}, Upstream{Name: "two", URL: two})
	alice, _ := vopen(t, u, "alice")
	bob, _ := vopen(t, u, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	bobGet := openGetStream(ctx, t, u, bob)
	// Bob's stream reaches one's GET stream once a marker comes.
	stopMarkers := sendMarkers(s)
	next := func() string {
		t.Helper()
		ev, err := bobGet.Next()
		if err != nil {
			t.Fatalf("bob's GET stream ended: %v", err)
		}
		return string(ev.Data)
	}
	for !strings.Contains(next(), "tools/list_changed") {
	}
	stopMarkers()

	_, _, body := post(t, u, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{"owner":"alice"},"task":{}}}`)
	if !strings.Contains(body, `"taskId":"one/`) || strings.Contains(body, `task\u0049d`) {
		t.Errorf("got %s, want the task's id as one/{id}", body)
	}
	close(release)
	time.Sleep(100 * time.Millisecond) // the status went to bob's inner stream too
	s.SendNotificationToAllClients("notifications/prompts/list_changed", nil)
	for {
		m := next()
		if strings.Contains(m, "tasks/status") {
			t.Fatalf("bob got %s, the status of alice's task", m)
		}
		if strings.Contains(m, "prompts/list_changed") {
			return
		}
	}
}

// openGetStream opens the GET stream of url with the headers h (a session's),
// until ctx ends or the test does.
func openGetStream(ctx context.Context, t *testing.T, url string, h map[string]string) *transport.SSEReader {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return transport.NewSSEReader(resp.Body)
}

// sendMarkers has s send every client a tools/list_changed every 50 ms,
// a marker a GET stream reaches once it is open, until stop is called.
func sendMarkers(s *server.MCPServer) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				s.SendNotificationToAllClients("notifications/tools/list_changed", nil)
			}
		}
	}()
	return func() { close(done) }
}

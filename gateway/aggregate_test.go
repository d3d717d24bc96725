package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// calls remembers the upstream and tool of every call policy decided.
type calls struct {
	mu   sync.Mutex
	seen []string
	next intercept.Decider
}

func (c *calls) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	c.mu.Lock()
	c.seen = append(c.seen, d.Upstream+"/"+d.ToolName)
	c.mu.Unlock()
	return c.next.Decide(ctx, d)
}

func (c *calls) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return ""
	}
	return c.seen[len(c.seen)-1]
}

type aggFixture struct {
	g       *Gateway
	url     string
	dec     *calls
	dropped chan string
}

// newAggFixture serves two demo upstreams with the same tools ("demo" and
// "other"), a third that is down ("gone"), and the virtual servers vs.
func newAggFixture(t *testing.T, vs ...VirtualServer) *aggFixture {
	t.Helper()
	up1 := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up1.Close)
	up2 := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up2.Close)
	down := httptest.NewServer(nil)
	downURL := down.URL
	down.Close()
	f := &aggFixture{dropped: make(chan string, 64)}
	f.dec = &calls{next: &intercept.StaticDecider{Default: intercept.Allow, Deny: []string{"other/add"}, Mode: intercept.ModeToolResult}}
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up1.URL + "/mcp"}, {Name: "other", URL: up2.URL + "/mcp"}, {Name: "gone", URL: downURL + "/mcp"}},
		VirtualServers: vs,
		OnAggregateDropped: func(virtual, upstream, why string) {
			select {
			case f.dropped <- virtual + "|" + upstream + "|" + why:
			default:
			}
		},
	}, &intercept.Interceptor{Decider: f.dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	f.url, f.g = gw.URL, g
	return f
}

func aggClient(t *testing.T, ctx context.Context, url string, opts ...mcptransport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	trans, err := mcptransport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "agg-test", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize %s: %v", url, err)
	}
	return c
}

func toolNames(t *testing.T, ctx context.Context, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		if !validToolName.MatchString(tl.Name) {
			t.Errorf("emitted name %q is not valid", tl.Name)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, ctx context.Context, c *client.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestAggregateOnCollision: one /mcp for every upstream; the first keeps
// bare names, the second gets its own prefixed; each call reaches the
// upstream that offers it and policy sees the real upstream and tool.
func TestAggregateOnCollision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newAggFixture(t, VirtualServer{})
	c := aggClient(t, ctx, f.url+"/mcp")
	names := toolNames(t, ctx, c)
	for _, want := range []string{"add", "echo", "other_add", "other_echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list = %v, want %q in it", names, want)
		}
	}
	// The down upstream dropped out of the list with an event, not an error.
	select {
	case d := <-f.dropped:
		if !strings.HasPrefix(d, "|gone|tools/list") {
			t.Errorf("dropped event = %q, want the gone upstream's tools/list", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("no event for the upstream that is down")
	}

	if txt, isErr := callText(t, ctx, c, "add", map[string]any{"a": 2, "b": 3}); isErr || !strings.Contains(txt, "5") {
		t.Errorf("add = %q (error %v), want 5", txt, isErr)
	}
	if got := f.dec.last(); got != "demo/add" {
		t.Errorf("policy saw %q, want demo/add", got)
	}
	// "other/add" is denied by a rule naming that upstream: the same tool
	// under its bare name on demo is not.
	txt, isErr := callText(t, ctx, c, "other_add", map[string]any{"a": 2, "b": 3})
	if !isErr || !strings.Contains(txt, "not allowed") {
		t.Errorf("other_add = %q (error %v), want the soft deny", txt, isErr)
	}
	if got := f.dec.last(); got != "other/add" {
		t.Errorf("policy saw %q, want other/add", got)
	}
	if txt, _ := callText(t, ctx, c, "other_echo", map[string]any{"message": "hi"}); !strings.Contains(txt, "hi") {
		t.Errorf("other_echo = %q", txt)
	}
	if got := f.dec.last(); got != "other/echo" {
		t.Errorf("policy saw %q, want other/echo", got)
	}
	// An unknown name is a clear error, not a call anywhere.
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "gone_echo"}}); err == nil || !strings.Contains(err.Error(), "no tool or prompt named") {
		t.Errorf("unknown tool: err = %v", err)
	}
}

// TestAggregateNamingModes: prefix names everything; never keeps names
// and leaves out (with an event) a duplicate nobody renamed.
func TestAggregateNamingModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newAggFixture(t,
		VirtualServer{Name: "pre", Upstreams: []string{"demo", "other"}, Naming: NamingPrefix},
		VirtualServer{Name: "plain", Upstreams: []string{"demo", "other"}, Naming: NamingNever, Renames: map[string]string{"other/echo": "echo_two"}},
	)
	pre := toolNames(t, ctx, aggClient(t, ctx, f.url+"/mcp/pre"))
	for _, n := range pre {
		if !strings.HasPrefix(n, "demo_") && !strings.HasPrefix(n, "other_") {
			t.Errorf("prefix mode emitted %q", n)
		}
	}
	if !slices.Contains(pre, "demo_echo") || !slices.Contains(pre, "other_echo") {
		t.Errorf("prefix: %v", pre)
	}
	c := aggClient(t, ctx, f.url+"/mcp/plain")
	plain := toolNames(t, ctx, c)
	if !slices.Contains(plain, "echo") || !slices.Contains(plain, "echo_two") || slices.Contains(plain, "other_add") {
		t.Errorf("never mode: %v", plain)
	}
	if got := len(plain); got != len(pre)/2+1 {
		t.Errorf("never mode lists %d tools, want demo's %d plus the rename", got, len(pre)/2)
	}
	if txt, _ := callText(t, ctx, c, "echo_two", map[string]any{"message": "renamed"}); !strings.Contains(txt, "renamed") {
		t.Errorf("echo_two = %q", txt)
	}
	if got := f.dec.last(); got != "other/echo" {
		t.Errorf("policy saw %q, want other/echo", got)
	}
	var events []string
	for len(f.dropped) > 0 {
		events = append(events, <-f.dropped)
	}
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "plain|other|tools/list: other/add") }) {
		t.Errorf("events %q: want other/add left out of plain", events)
	}
}

// TestAggregateListChanged: a tools/list_changed from one upstream reaches
// the client's GET stream, and the next list shows the new description.
func TestAggregateListChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}})
	c := aggClient(t, ctx, f.url+"/mcp", mcptransport.WithContinuousListening())
	changed := make(chan struct{}, 4)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			tell(t, changed, struct{}{})
		}
	})
	desc := func() string {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "other_web_search" {
				return tl.Description
			}
		}
		t.Fatal("other_web_search not listed")
		return ""
	}
	before := desc()
	time.Sleep(200 * time.Millisecond) // let the GET streams open
	callText(t, ctx, c, "other_"+demo.ToolRotateDescription, nil)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed on the virtual server")
	}
	if after := desc(); after == before {
		t.Errorf("description unchanged after rotate: %q", after)
	}
}

func TestAggregateConfigRefused(t *testing.T) {
	ups := []Upstream{{Name: "a", URL: "http://127.0.0.1:1/mcp"}, {Name: "b", URL: "http://127.0.0.1:1/mcp"}}
	for _, tc := range []struct {
		vs   VirtualServer
		want string
	}{
		{VirtualServer{Name: "a"}, "an upstream has that name"},
		{VirtualServer{Upstreams: []string{"c"}}, `no upstream named "c"`},
		{VirtualServer{Naming: "sometimes"}, "naming"},
		{VirtualServer{Renames: map[string]string{"a/x": "has space"}}, "names must match"},
		{VirtualServer{Renames: map[string]string{"x": "y"}}, "upstream/tool"},
	} {
		_, err := New(Options{Upstreams: ups, VirtualServers: []VirtualServer{tc.vs}}, &intercept.Interceptor{Decider: allowEcho}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.vs, err, tc.want)
		}
	}
}

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	vs := VirtualServer{Naming: NamingOnCollision}
	names, to, dropped := vs.assignNames([]offered{
		{upstream: "github", name: "create_issue"},
		{upstream: "gitlab", name: "create_issue"},
		{upstream: "gitlab", name: "jobs.list"},
		{upstream: "a", name: long},
		{upstream: "a", name: long + "y"},
	})
	if len(dropped) != 0 {
		t.Errorf("dropped %v", dropped)
	}
	want := []string{"create_issue", "gitlab_create_issue", "jobs_list"}
	for i, w := range want {
		if names[i] != w {
			t.Errorf("names[%d] = %q, want %q", i, names[i], w)
		}
	}
	if to["gitlab_create_issue"] != (target{"gitlab", "create_issue"}) || to["jobs_list"] != (target{"gitlab", "jobs.list"}) {
		t.Errorf("targets %v", to)
	}
	if names[3] == names[4] || len(names[3]) != 64 || !validToolName.MatchString(names[4]) {
		t.Errorf("long names %q %q", names[3], names[4])
	}
	// Adding an upstream at the end changes no earlier name.
	again, _, _ := vs.assignNames([]offered{
		{upstream: "github", name: "create_issue"},
		{upstream: "gitlab", name: "create_issue"},
		{upstream: "gitlab", name: "jobs.list"},
		{upstream: "a", name: long},
		{upstream: "a", name: long + "y"},
		{upstream: "jira", name: "create_issue"},
	})
	if !slices.Equal(again[:5], names) || again[5] != "jira_create_issue" {
		t.Errorf("after adding jira: %v, was %v", again, names)
	}
}

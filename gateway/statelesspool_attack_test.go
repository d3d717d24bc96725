package gateway

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// buildStateServer builds testdata/stateserver, an mcp-go stdio server
// whose remember and recall tools keep a value for the process.
func buildStateServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stateserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/stateserver").CombinedOutput(); err != nil {
		t.Fatalf("building stateserver: %v\n%s", err, out)
	}
	return bin
}

// statefulCall is a 2026-07-28 tools/call of the stateserver's tools as
// principal who.
func statefulCall(t *testing.T, u, who, tool, args string) (int, string) {
	t.Helper()
	h := modernHeaders("tools/call", tool)
	if who != "" {
		h["X-Test-Principal"] = who
	}
	status, _, body := post(t, u, h, modernCall(1, tool, args))
	return status, body
}

// TestAttackStatelessPrincipalsShareChild: 2026-07-28 requests to a stdio
// upstream all went down one child process per route, whoever sent them,
// so what a server keeps per process (a browser's cookies and pages, a
// shell's directory, a login) was one principal's and every other's: bob
// recalled what alice had told the server. Each authenticated principal
// now has a connection (a child) of its own, taking a place among the
// route's max_children with its share, ended when idle or, unused, to make
// room for another principal's; requests without a principal share one as
// before.
func TestAttackStatelessPrincipalsShareChild(t *testing.T) {
	g, err := New(Options{
		Upstreams:          []Upstream{{Name: "state", Command: buildStateServer(t), MaxChildren: 2}},
		SessionIdleTimeout: 200 * time.Millisecond,
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"remember", "recall", "sleep"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/state"

	if status, body := statefulCall(t, u, "alice", "remember", `{"value":"alice's session cookie"}`); status != 200 || !strings.Contains(body, "remembered") {
		t.Fatalf("alice remember: %d %s", status, body)
	}
	if _, body := statefulCall(t, u, "alice", "recall", `{}`); !strings.Contains(body, "recalled alice's session cookie") {
		t.Fatalf("alice's own recall lost her state: %s", body)
	}
	if status, body := statefulCall(t, u, "bob", "recall", `{}`); status != 200 || !strings.Contains(body, "recalled nothing") {
		t.Errorf("bob reached alice's process: %d %s", status, body)
	}
	if _, body := statefulCall(t, u, "", "recall", `{}`); !strings.Contains(body, "recalled nothing") {
		t.Errorf("a request without a principal reached alice's process: %s", body)
	}

	pool := g.stateless["state"]
	inUse := func() int {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		n := 0
		for _, pb := range pool.m {
			n += min(pb.users, 1)
		}
		return n
	}
	// A request's place in use is given back just after its answer.
	for deadline := time.Now().Add(5 * time.Second); inUse() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}

	// max_children 2, alice's and bob's children running: carol's first
	// request ends the one unused longest (alice's), whose state is gone.
	if status, body := statefulCall(t, u, "carol", "recall", `{}`); status != 200 || !strings.Contains(body, "recalled nothing") {
		t.Errorf("carol with every child idle: %d %s", status, body)
	}
	if _, body := statefulCall(t, u, "alice", "recall", `{}`); !strings.Contains(body, "recalled nothing") {
		t.Errorf("alice after her idle child made room: %s", body)
	}

	// With both children in use, a third principal is refused with the
	// limit's error, and no call in flight is cut.
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, body := statefulCall(t, u, who, "sleep", `{"ms":1500}`); status != 200 || !strings.Contains(body, "slept") {
				t.Errorf("%s's call in flight: %d %s", who, status, body)
			}
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); inUse() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if status, body := statefulCall(t, u, "carol", "recall", `{}`); status != 503 || !strings.Contains(body, "max_children") {
		t.Errorf("carol with every child in use: got %d %s, want 503 naming max_children", status, body)
	}
	wg.Wait()

	// Idle for session_idle_timeout, the principals' children end and
	// give their places back.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pool.mu.Lock()
		n := len(pool.m)
		pool.mu.Unlock()
		a, errA := g.routes["state"].children.take("dave")
		b, errB := g.routes["state"].children.take("erin")
		a.release()
		b.release()
		if n == 0 && errA == nil && errB == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("principals' children still running after their idle time: %d left, places %v %v", n, errA, errB)
		}
	}

	// A 2025-era session's child takes the place of an idle principal's.
	statefulCall(t, u, "alice", "recall", `{}`)
	statefulCall(t, u, "bob", "recall", `{}`)
	initialize(t, u)
}

// TestStatelessIdleChildHoldsAgentShare: a principal's 2026-07-28 child
// counts in its agent's share of max_children (half), so alice, after one
// 2026-07-28 call to a route of max_children 2 (a share of 1), was refused
// every 2025-era session there (429) for session_idle_timeout while her
// own child sat idle: the idle child made room only when every place was
// taken (503), not when her share was. Her idle child now gives its place
// to her session. And with every place taken and her share full, her
// request ended bob's idle child (his state lost) before being refused
// anyway: another principal's is never taken when her share is full.
func TestStatelessIdleChildHoldsAgentShare(t *testing.T) {
	g, err := New(Options{
		Upstreams: []Upstream{{Name: "state", Command: buildStateServer(t), MaxChildren: 2}},
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"remember", "recall"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/state"
	pool := g.stateless["state"]
	idle := func() bool {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		for _, pb := range pool.m {
			if pb.users > 0 {
				return false
			}
		}
		return true
	}

	if status, body := statefulCall(t, u, "alice", "remember", `{"value":"x"}`); status != 200 || !strings.Contains(body, "remembered") {
		t.Fatalf("alice remember: %d %s", status, body)
	}
	for deadline := time.Now().Add(5 * time.Second); !idle() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	status, hdr, body := post(t, u, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice"}, init)
	if status != 200 || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("alice's session with her 2026-07-28 child idle: got %d %s, want 200", status, body)
	}

	// Bob's idle child is not alice's to take: with her share held by
	// her session, her next session and 2026-07-28 calls are refused and
	// bob keeps his state.
	if status, body := statefulCall(t, u, "bob", "remember", `{"value":"bob's"}`); status != 200 {
		t.Fatalf("bob remember: %d %s", status, body)
	}
	for deadline := time.Now().Add(5 * time.Second); !idle() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if status, _, body := post(t, u, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice"}, init); status == 200 || !strings.Contains(body, "max_children") {
		t.Errorf("alice's second session over her share: got %d %s, want refused naming max_children", status, body)
	}
	if _, body := statefulCall(t, u, "bob", "recall", `{}`); !strings.Contains(body, "recalled bob's") {
		t.Errorf("bob's child ended for alice's second session: %s", body)
	}
	statefulCall(t, u, "bob", "remember", `{"value":"bob's"}`)
	for deadline := time.Now().Add(5 * time.Second); !idle() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if status, body := statefulCall(t, u, "alice", "recall", `{}`); status == 200 || !strings.Contains(body, "max_children") {
		t.Errorf("alice's 2026-07-28 call over her share: got %d %s, want refused naming max_children", status, body)
	}
	if _, body := statefulCall(t, u, "bob", "recall", `{}`); !strings.Contains(body, "recalled bob's") {
		t.Errorf("bob's child ended for alice's 2026-07-28 call: %s", body)
	}
}

// TestStatelessPrincipalsTaskIDsRepeat: each principal's 2026-07-28
// requests go to a process of their own, whose task ids another's may
// repeat (a server numbering its tasks from 1), but the gateway recorded
// whose a task is per route, first come first served: bob's task 1,
// made after alice's task 1 in her process, was alice's to the gateway,
// and bob's tasks/get of his own task answered "task not found". A
// principal's tasks are now recorded within its connection's scope, as a
// session's are within the session's.
func TestStatelessPrincipalsTaskIDsRepeat(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "seqtaskserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/seqtaskserver").CombinedOutput(); err != nil {
		t.Fatalf("building seqtaskserver: %v\n%s", err, out)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "seq", Command: bin}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"make"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/seq"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	as := func(who string, h map[string]string) map[string]string {
		h["X-Test-Principal"] = who
		return h
	}
	for _, who := range []string{"alice", "bob"} {
		status, _, body := post(t, u, as(who, modernHeaders("tools/call", "make")),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"make","arguments":{"value":"`+who+`'s task"},"task":{},`+meta+`}}`)
		if status != 200 || !strings.Contains(body, `"taskId":"1"`) {
			t.Fatalf("%s's task: %d %s", who, status, body)
		}
	}
	for _, who := range []string{"alice", "bob"} {
		_, _, body := post(t, u, as(who, modernHeaders("tasks/get", "1")),
			`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"1",`+meta+`}}`)
		if !strings.Contains(body, who+"'s task") {
			t.Errorf("%s's tasks/get of the task its process made: %s", who, body)
		}
	}
}

// memTasks is an intercept.TaskStore in memory: the store replicas share
// (agent_tasks.redis_url) without Redis.
type memTasks struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memTasks) Claim(_ context.Context, key, owner string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if first, ok := s.m[key]; ok {
		return first, nil
	}
	s.m[key] = owner
	return owner, nil
}

func (s *memTasks) Owner(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[key]
	return o, ok, nil
}

// TestStatelessPrincipalsRequestStateAcrossReplicas: a requestState a
// bridged upstream gave a principal's 2026-07-28 call through one replica
// is taken with the retry through another sharing the task store, as for
// requests without a principal (its tasks and states are the principal's
// own, TestStatelessPrincipalsTaskIDsRepeat, but still shared); another
// principal's retry with it is refused.
func TestStatelessPrincipalsRequestStateAcrossReplicas(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "seqtaskserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/seqtaskserver").CombinedOutput(); err != nil {
		t.Fatalf("building seqtaskserver: %v\n%s", err, out)
	}
	store := &memTasks{m: map[string]string{}}
	var urls []string
	for range 2 {
		g, err := New(Options{Upstreams: []Upstream{{Name: "seq", Command: bin}}},
			&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"ask"}}, Tasks: store}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, principalGateway(t, g).URL+"/mcp/seq")
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	as := func(who string) map[string]string {
		h := modernHeaders("tools/call", "ask")
		h["X-Test-Principal"] = who
		return h
	}
	status, _, body := post(t, urls[0], as("alice"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"value":"a"},`+meta+`}}`)
	if status != 200 || !strings.Contains(body, `"requestState":"state-of-a"`) {
		t.Fatalf("alice's call through replica A: %d %s", status, body)
	}
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"value":"a"},"requestState":"state-of-a","inputResponses":{"q":{"action":"accept","content":{}}},` + meta + `}}`
	if _, _, body := post(t, urls[1], as("bob"), retry); strings.Contains(body, "answered") {
		t.Errorf("bob's retry with alice's state through replica B: %s", body)
	}
	if _, _, body := post(t, urls[1], as("alice"), retry); !strings.Contains(body, "answered state-of-a") {
		t.Errorf("alice's retry through replica B: %s", body)
	}
}

package intercept

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Tasks are their creator's: a handle in either era's shape is recorded
// for the agent (or principal) whose request it answers; tasks/list keeps
// only the caller's; tasks/* naming another's task, in a batch too, is
// answered "task not found" and not forwarded.
func TestTaskOwnership(t *testing.T) {
	ic := &Interceptor{Decider: &StaticDecider{Allow: []string{"x"}}}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	bob := CallContext{Upstream: "u", Agent: "bob"}
	ctx := context.Background()
	for _, h := range []string{`{"task":{"taskId":"t1","status":"working"}}`, `{"resultType":"task","taskId":"t2"}`} {
		ic.ObserveTask(ctx, alice, jsontext.Value(h))
	}
	ic.ObserveTask(ctx, bob, jsontext.Value(`{"task":{"taskId":"t1"}}`))     // the first owner stays
	ic.ObserveTask(ctx, bob, jsontext.Value(`{"content":[],"taskId":"t3"}`)) // not a handle
	for id, want := range map[string]bool{"t1": true, "t2": true, "t3": false} {
		if got := ic.OwnsTask(ctx, alice, id); got != want {
			t.Errorf("alice owns %s: %v, want %v", id, got, want)
		}
		if ic.OwnsTask(ctx, bob, id) {
			t.Errorf("bob owns %s", id)
		}
	}
	if ic.OwnsTask(ctx, CallContext{Upstream: "other", Agent: "alice"}, "t1") {
		t.Error("a task id on another upstream is another task")
	}
	pAlice := CallContext{Upstream: "u", Agent: "claimed", Principal: &Principal{ID: "alice"}}
	if ic.OwnsTask(ctx, pAlice, "t1") {
		t.Error("an authenticated principal named alice owns the task of a self-declared alice")
	}

	out, changed := ic.FilterTasksResult(ctx, bob, jsontext.Value(`{"tasks":[{"taskId":"t1"},{"taskId":"t2"}],"nextCursor":"c"}`))
	if !changed || string(out) != `{"tasks":[],"nextCursor":"c"}` {
		t.Errorf("bob's tasks/list: %s (changed %v)", out, changed)
	}
	out, changed = ic.FilterTasksResult(ctx, alice, jsontext.Value(`{"tasks":[{"taskId":"t1"},{"taskId":"zz"}]}`))
	if !changed || string(out) != `{"tasks":[{"taskId":"t1"}]}` {
		t.Errorf("alice's tasks/list: %s (changed %v)", out, changed)
	}

	msgs, _, err := Decode([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	reply, forward := ic.CheckBatch(ctx, msgs, bob)
	if forward || !strings.Contains(string(reply), "task not found") {
		t.Errorf("bob's batch with tasks/get of alice's task: forward %v, %s", forward, reply)
	}
	if _, forward := ic.CheckBatch(ctx, msgs, alice); !forward {
		t.Error("alice's own batch was refused")
	}
	// A task method sent as a notification (no id to answer) names a
	// task unchecked: refused.
	if m, _, err := Decode([]byte(`{"jsonrpc":"2.0","method":"tasks/cancel","params":{"taskId":"t1"}}`)); err != nil {
		t.Fatal(err)
	} else if _, forward := ic.Check(ctx, m[0], bob); forward {
		t.Error("bob's tasks/cancel of alice's task sent as a notification was forwarded")
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"TaskID":"t1"}}`, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":7}}`} {
		m, _, err := Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if reply, forward := ic.Check(ctx, m[0], alice); forward || !strings.Contains(string(reply), "-32602") {
			t.Errorf("%s: forward %v, %s", body, forward, reply)
		}
	}
}

// mapTasks is a TaskStore in memory, shared by Interceptors as Redis is
// shared by replicas; it counts the owners it is asked for, and answers
// nothing while down.
type mapTasks struct {
	mu      sync.Mutex
	m       map[string]string
	lookups int
	down    bool
}

var errTasksDown = errors.New("the task store does not answer")

func (s *mapTasks) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *mapTasks) Claim(_ context.Context, key, owner string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return "", errTasksDown
	}
	if first, ok := s.m[key]; ok {
		return first, nil
	}
	s.m[key] = owner
	return owner, nil
}

func (s *mapTasks) Owner(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	if s.down {
		return "", false, errTasksDown
	}
	owner, ok := s.m[key]
	return owner, ok, nil
}

// stalledTasks is a TaskStore that does not answer: each lookup waits
// out its timeout, as the Redis store's does.
type stalledTasks struct {
	timeout time.Duration
	lookups atomic.Int32
}

func (s *stalledTasks) Claim(ctx context.Context, _, _ string) (string, error) {
	_, _, err := s.Owner(ctx, "")
	return "", err
}

func (s *stalledTasks) Owner(ctx context.Context, _ string) (string, bool, error) {
	s.lookups.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	<-ctx.Done()
	return "", false, ctx.Err()
}

// TestTasksListStalledStore: a tasks/list answer naming tasks this
// replica has not seen, with the shared store not answering, asked it
// about each in turn, a timeout apiece: 256 of them at agent_tasks.timeout
// (500ms) held the answer for over two minutes (and logged 256 WARN
// lines). After the first lookup that fails, the rest of the answer's
// unknown tasks are held back unasked.
func TestTasksListStalledStore(t *testing.T) {
	store := &stalledTasks{timeout: 20 * time.Millisecond}
	ic := &Interceptor{Tasks: store}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	var many strings.Builder
	many.WriteString(`{"tasks":[`)
	for n := range maxStoreLookups {
		if n > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"taskId":"x%d"}`, n)
	}
	many.WriteString(`]}`)
	start := time.Now()
	out, _ := ic.FilterTasksResult(context.Background(), alice, jsontext.Value(many.String()))
	took := time.Since(start)
	if string(out) != `{"tasks":[]}` {
		t.Errorf("unknown tasks, the store stalled: kept %.60s, want none", out)
	}
	if n := store.lookups.Load(); n != 1 || took > time.Second {
		t.Errorf("%d unknown tasks, the store stalled: %d lookups in %s, want 1 (one timeout, 20ms)", maxStoreLookups, n, took.Round(time.Millisecond))
	}
}

// TestTaskOwnerNotTakenWhileStoreDown: an upstream answers alice
// through replica b with a handle of bob's task (created through a; a
// server's mistake, or worse) while the shared store does not answer.
// Neither then nor once the store answers again is the task alice's on
// b, and it stays bob's there; a task alice started through b meanwhile
// is hers once the store answers, on every replica. Before, b took the
// handle's caller as the owner when the store did not answer: alice read
// bob's task through b, and bob lost it there, until b restarted.
func TestTaskOwnerNotTakenWhileStoreDown(t *testing.T) {
	store := &mapTasks{m: map[string]string{}}
	a, b := &Interceptor{Tasks: store}, &Interceptor{Tasks: store}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	bob := CallContext{Upstream: "u", Agent: "bob"}
	ctx := context.Background()
	a.ObserveTask(ctx, bob, jsontext.Value(`{"task":{"taskId":"bobs"}}`))
	store.setDown(true)
	b.ObserveTask(ctx, alice, jsontext.Value(`{"task":{"taskId":"bobs"}}`))
	b.ObserveTask(ctx, alice, jsontext.Value(`{"task":{"taskId":"alices"}}`))
	if b.OwnsTask(ctx, alice, "bobs") {
		t.Error("with the store down, bob's task is alice's on b")
	}
	store.setDown(false)
	if b.OwnsTask(ctx, alice, "bobs") || !b.OwnsTask(ctx, bob, "bobs") {
		t.Error("once the store answers again, bob's task is not bob's alone on b")
	}
	if !b.OwnsTask(ctx, alice, "alices") || !a.OwnsTask(ctx, alice, "alices") {
		t.Error("a task alice started through b while the store was down is not hers once it answers")
	}
}

// TestTaskStoreDownSaysSo: tasks/get of a task this replica has not
// seen, while the shared store does not answer, is refused "task not
// found" saying the store did not answer (try again), not as a task
// that is gone; with the store up, one it does not hold is just not
// found.
func TestTaskStoreDownSaysSo(t *testing.T) {
	store := &mapTasks{m: map[string]string{}, down: true}
	ic := &Interceptor{Tasks: store}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	get, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-elsewhere"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ic.checkTask(context.Background(), get, alice)); !strings.Contains(got, "task not found") || !strings.Contains(got, "shared task store") {
		t.Errorf("the store down: %s; want task not found, saying the shared task store did not answer", got)
	}
	store.setDown(false)
	if got := string(ic.checkTask(context.Background(), get, alice)); !strings.Contains(got, "task not found") || strings.Contains(got, "shared task store") {
		t.Errorf("a task no replica saw, the store up: %s; want task not found, and no word of the store", got)
	}
}

// TestSharedTaskOwners: replicas sharing a TaskStore agree on who owns a
// task, the first claim winning on any of them; tasks/list answers are
// filtered with the store too, asking it about at most maxStoreLookups
// tasks of one answer; a session's own upstream process keeps its tasks
// out of the store.
func TestSharedTaskOwners(t *testing.T) {
	store := &mapTasks{m: map[string]string{}}
	a, b := &Interceptor{Tasks: store}, &Interceptor{Tasks: store}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	bob := CallContext{Upstream: "u", Agent: "bob"}
	ctx := context.Background()
	a.ObserveTask(ctx, alice, jsontext.Value(`{"task":{"taskId":"t1"}}`))
	b.ObserveTask(ctx, bob, jsontext.Value(`{"task":{"taskId":"t1"}}`)) // alice was first, on A
	if !b.OwnsTask(ctx, alice, "t1") || b.OwnsTask(ctx, bob, "t1") || a.OwnsTask(ctx, bob, "t1") {
		t.Error("replicas disagree on the owner of t1, or bob's later claim won")
	}
	out, _ := b.FilterTasksResult(ctx, alice, jsontext.Value(`{"tasks":[{"taskId":"t1"},{"taskId":"t9"}]}`))
	if string(out) != `{"tasks":[{"taskId":"t1"}]}` {
		t.Errorf("alice's tasks/list through B: %s", out)
	}

	var many strings.Builder
	many.WriteString(`{"tasks":[`)
	for n := range 2 * maxStoreLookups {
		if n > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"taskId":"x%d"}`, n)
	}
	many.WriteString(`]}`)
	store.lookups = 0
	out, _ = a.FilterTasksResult(ctx, alice, jsontext.Value(many.String()))
	if string(out) != `{"tasks":[]}` || store.lookups > maxStoreLookups {
		t.Errorf("a list of %d unknown tasks: %d lookups, kept %.40s", 2*maxStoreLookups, store.lookups, out)
	}

	own := CallContext{Upstream: "u", Agent: "alice", TaskScope: "session-1"}
	a.ObserveTask(ctx, own, jsontext.Value(`{"task":{"taskId":"s1"}}`))
	if len(store.m) != 1 || !a.OwnsTask(ctx, own, "s1") {
		t.Errorf("a session's own task: store %v, owned %v", store.m, a.OwnsTask(ctx, own, "s1"))
	}
}

// A tasks/list answer whose list or a task's id is spelled in another
// case is read so by Go's encoding/json (mcp-go's and the go-sdk's
// clients): "Tasks" passed unfiltered, and of "taskId":"b1","TaskId":"t1"
// the gateway kept the task as the client's b1 while the client read t1.
// Neither is shown now.
func TestFilterTasksResultCaseVariants(t *testing.T) {
	ic := &Interceptor{}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	bob := CallContext{Upstream: "u", Agent: "bob"}
	ctx := context.Background()
	ic.ObserveTask(ctx, alice, jsontext.Value(`{"task":{"taskId":"t1"}}`))
	ic.ObserveTask(ctx, bob, jsontext.Value(`{"task":{"taskId":"b1"}}`))
	for _, c := range []struct {
		name string
		cc   CallContext
		in   string
		want string
	}{
		{"Tasks", bob, `{"Tasks":[{"taskId":"t1"}],"nextCursor":"c"}`, `{"tasks":[]}`},
		{"TASKS beside tasks", bob, `{"tasks":[{"taskId":"b1"}],"TASKS":[{"taskId":"t1"}]}`, `{"tasks":[]}`},
		{"TaskId beside taskId", bob, `{"tasks":[{"taskId":"b1","TaskId":"t1"},{"taskId":"b1"}]}`, `{"tasks":[]}`},
		{"TaskId alone", alice, `{"tasks":[{"TaskId":"t1"}]}`, `{"tasks":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, changed := ic.FilterTasksResult(ctx, c.cc, jsontext.Value(c.in))
			if !changed || string(out) != c.want {
				t.Errorf("got %s (changed %v), want %s", out, changed, c.want)
			}
		})
	}
}

// TestAttackUnclaimedFloodDuringStall: the task handles a replica records
// while the shared store does not answer wait (unclaimed) to be claimed
// once it answers, at most maxUnclaimed of them, an arbitrary one
// forgotten past that. Mallory, starting tasks without end during the
// stall, pushed out alice's: once the store answered, alice's task was
// "not found" for good. One caller's share now holds at most a tenth of
// them, and pushes out only its own.
func TestAttackUnclaimedFloodDuringStall(t *testing.T) {
	ctx := context.Background()
	store := &mapTasks{m: map[string]string{}}
	ic := &Interceptor{Tasks: store}
	alice := CallContext{Upstream: "u", Agent: "alice"}
	mallory := CallContext{Upstream: "u", Agent: "mallory"}
	store.setDown(true)
	ic.ObserveTask(ctx, alice, jsontext.Value(`{"task":{"taskId":"alices"}}`))
	for i := range 10 * maxUnclaimed {
		ic.ObserveTask(ctx, mallory, jsontext.Value(fmt.Sprintf(`{"task":{"taskId":"m-%d"}}`, i)))
	}
	store.setDown(false)
	if !ic.OwnsTask(ctx, alice, "alices") {
		t.Fatal("alice's task, answered while the store did not answer, is not hers once it answers: mallory's tasks pushed it out")
	}
	if !ic.OwnsTask(ctx, mallory, fmt.Sprint("m-", 10*maxUnclaimed-1)) {
		t.Error("mallory's newest task is not hers once the store answers: a caller past its share keeps its newest")
	}
}

package intercept

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackLongNamesBoundTaskRecords: without auth a task's owner is
// the agent, the name the client gives, as long as a request, and its
// session's id (a sealed id carries the name) scopes the task: each task
// an upstream made for a client naming itself with 1 MiB put both whole
// into the replicas' Redis (agent_tasks, kept 7 days). A long owner and
// a long key are kept there as their SHA-256, and still tell owners and
// tasks apart.
func TestAttackLongNamesBoundTaskRecords(t *testing.T) {
	store := &mapTasks{m: map[string]string{}}
	a, b := &Interceptor{Tasks: store}, &Interceptor{Tasks: store}
	long := "mallory" + strings.Repeat("x", 1<<20)
	scope := "s2." + strings.Repeat("y", 1<<20)
	own := CallContext{Upstream: "u", Agent: long, TaskScope: scope, SharedTaskScope: true}
	ctx := context.Background()
	a.ObserveTask(ctx, own, jsontext.Value(`{"task":{"taskId":"t1"}}`))
	for k, v := range store.m {
		if len(k)+len(v) > 16<<10 {
			t.Errorf("the shared store holds a task record of %d bytes (key %d, owner %d)", len(k)+len(v), len(k), len(v))
		}
	}
	if len(store.m) != 1 {
		t.Fatalf("the shared store holds %d records, want 1", len(store.m))
	}
	for _, ic := range []*Interceptor{a, b} {
		if !ic.OwnsTask(ctx, own, "t1") {
			t.Error("the owner does not own its task")
		}
		for _, other := range []CallContext{
			{Upstream: "u", Agent: long[:len(long)-1] + "z", TaskScope: scope, SharedTaskScope: true},
			{Upstream: "u", Agent: "mallory", TaskScope: scope, SharedTaskScope: true},
			{Upstream: "u", Agent: long, TaskScope: scope[:len(scope)-1] + "z", SharedTaskScope: true},
		} {
			if ic.OwnsTask(ctx, other, "t1") {
				t.Errorf("agent of %d bytes in a session of %d owns another's task", len(other.Agent), len(other.TaskScope))
			}
		}
	}
}

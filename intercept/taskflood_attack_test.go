package intercept

import (
	"context"
	"strconv"
	"testing"
)

// TestAttackTaskFloodForgetsOthersTasks (found by an attacker review): an
// Interceptor remembers the owners of the last 100,000 tasks, oldest
// forgotten first, whoever's: one agent starting tasks without end (a
// task-augmented call each) pushed every other agent's tasks out, which
// were then "task not found" to their owners for good (without a shared
// store). An owner now holds at most a tenth of the table, forgetting its
// own oldest past that.
func TestAttackTaskFloodForgetsOthersTasks(t *testing.T) {
	i := &Interceptor{}
	ctx := context.Background()
	alice := CallContext{Upstream: "u", Agent: "alice"}
	mallory := CallContext{Upstream: "u", Agent: "mallory"}
	i.ObserveTask(ctx, alice, []byte(`{"task":{"taskId":"alice-1"}}`))
	for n := range maxTasks {
		i.ObserveTask(ctx, mallory, []byte(`{"task":{"taskId":"m-`+strconv.Itoa(n)+`"}}`))
	}
	if !i.OwnsTask(ctx, alice, "alice-1") {
		t.Errorf("alice's task is forgotten after another agent started %d tasks", maxTasks)
	}
	if !i.OwnsTask(ctx, mallory, "m-"+strconv.Itoa(maxTasks-1)) {
		t.Errorf("mallory's newest task is forgotten")
	}
	if i.OwnsTask(ctx, mallory, "m-0") {
		t.Errorf("mallory holds more than %d tasks", maxTasksPerOwner)
	}
}

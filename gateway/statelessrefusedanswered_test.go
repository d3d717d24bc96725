package gateway

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestStatelessRefusedForgetsCalls: a principal's 2026-07-28 call allowed
// by policy but refused for want of a stdio child (every place of
// max_children in use) was answered 503, but what the interceptor had
// noted of it at its decision, to bind a requestState its answer might
// carry, was never let go: each refusal stayed in the table until 20,000
// had piled up, pushing out the notes of calls still running, whose
// states were then forgotten.
func TestStatelessRefusedForgetsCalls(t *testing.T) {
	ic := &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"sleep"}}}
	g, err := New(Options{Upstreams: []Upstream{{Name: "state", Command: buildStateServer(t), MaxChildren: 1}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/state"
	pool := g.stateless["state"]
	busy := func() bool {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		pb := pool.m["alice"]
		return pb != nil && pb.users > 0
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if status, body := statefulCall(t, u, "alice", "sleep", `{"ms":1000}`); status != 200 || !strings.Contains(body, "slept") {
			t.Errorf("alice's call: %d %s", status, body)
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); !busy() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	for range 3 {
		if status, body := statefulCall(t, u, "bob", "sleep", `{"ms":1}`); status != 503 || !strings.Contains(body, "max_children") {
			t.Fatalf("bob's call with the only child in use: %d %s, want 503 naming max_children", status, body)
		}
	}
	wg.Wait()
	if n := ic.AwaitingAnswers(); n != 0 {
		t.Errorf("after alice's call answered and bob's 3 refused, %d still await their answer, want 0", n)
	}
}

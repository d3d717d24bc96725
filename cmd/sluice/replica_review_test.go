package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRouteMemoryForgottenByRedisRestart: an agent reads a sensitive
// source, then the route memory's Redis restarts empty (the Helm chart's
// own Redis runs without persistence; a failover to a replica that had not
// caught up does the same). Once Redis answers again the gateway serves
// again without a restart, as promised — but the agent is clean: the sink
// the route rule exists to stop is allowed. The in-process store treats a
// memory it lost as evicted (route_memory_evicted) and denies; the Redis
// store cannot tell a lost memory from one never written. It should deny
// (route_memory_evicted or policy_error) until the window has passed.
func TestRouteMemoryForgottenByRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no sink after a sensitive read}
route_memory: {redis_url: "` + srv.URL() + `", key_prefix: "test:", timeout: 200ms}
`
	a, b := startServe(t, cfg), startServe(t, cfg)
	email := `{"name":"send_email","arguments":{"to":"x@example.com","subject":"s","body":"b"}}`
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", `{"name":"echo","arguments":{"message":"salaries"}}`); !strings.Contains(got, "salaries") {
		t.Fatalf("source: %s", got)
	}
	if got := modernCallAs(t, b.url, "alice", "tools/call", "send_email", email); !strings.Contains(got, `"matched_route_rule_id":"no-exfil"`) {
		t.Fatalf("sink before the restart: got %s, want a deny by no-exfil", got)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = modernCallAs(t, b.url, "alice", "tools/call", "send_email", email); !strings.Contains(got, "policy_error") {
			break // Redis answers again
		}
	}
	if !strings.Contains(got, `"isError":true`) {
		t.Errorf("alice's sink after the route memory's Redis restarted empty: got %s, want it denied (she read a sensitive source)", got)
	}
}

// TestRateLimitTimeoutWhenRedisHangs: rate_limits.timeout (200ms by
// default) is documented as the longest a bucket check in Redis takes
// before the call is denied with policy_error. With the Redis paused
// (SIGSTOP: connections stay open, nothing answers — a stalled server or a
// partition) every call under a limit should be denied within about that
// timeout; the go-redis client the gateway builds ignores the context's
// deadline for reads (ContextTimeoutEnabled is off) and waits for its own
// 3s ReadTimeout, so each call, allowed or not, stalls for seconds.
func TestRateLimitTimeoutWhenRedisHangs(t *testing.T) {
	srv := redistest.Start(t)
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  redis_url: "`+srv.URL()+`"
  key_prefix: "test:rl:"
  timeout: 200ms
  rules:
    - {id: per-agent, by: [principal], rate: 100/s}
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	if got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo); !strings.Contains(got, "hi") {
		t.Fatalf("call with Redis up: %s", got)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	began := time.Now()
	got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo)
	took := time.Since(began)
	if !strings.Contains(got, "policy_error") {
		t.Errorf("call with Redis paused: %s; want policy_error", got)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("call with Redis paused took %v; rate_limits.timeout is 200ms", took)
	}
}

// TestHeldCallsQueueBehindHungApprovalsRedis: with the approvals' Redis
// paused (SIGSTOP: connections open, nothing answers), each call that
// must be held is denied with policy_error — fail closed, as promised —
// but only after the store's one process-wide mutex comes round to it:
// Store.lock holds s.mu across every Redis round trip (take the lock key,
// read every request, commit), each of which waits out its own timeouts,
// so the k-th of n concurrent held calls waits about k×5s, and a client
// that gives up keeps its place in the queue. Four agents' held calls
// take 20s here; a hundred would take minutes, as would the admin API's
// list. Each call should be answered within one operation's bound.
func TestHeldCallsQueueBehindHungApprovalsRedis(t *testing.T) {
	srv := redistest.Start(t)
	cfg := "policy: {default: allow, result_mode: tool_result, require_approval: [add]}\nadmin_token: t0k\n" +
		"approvals: {redis_url: \"" + srv.URL() + "\", key_prefix: \"test:\"}\n"
	g := startServe(t, cfg)
	if got := modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":1,"b":1}}`); !strings.Contains(got, "approval_required") {
		t.Fatalf("held call with Redis up: %s", got)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	const n = 4
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	bodies := make([]string, n)
	for i := range n {
		wg.Go(func() {
			began := time.Now()
			bodies[i] = modernCallAs(t, g.url, fmt.Sprintf("agent-%d", i), "tools/call", "add", fmt.Sprintf(`{"name":"add","arguments":{"a":%d,"b":3}}`, i))
			took[i] = time.Since(began)
		})
	}
	wg.Wait()
	for i := range n {
		if !strings.Contains(bodies[i], "policy_error") {
			t.Errorf("held call %d with Redis paused: %.200s; want policy_error", i, bodies[i])
		}
		if took[i] > 7*time.Second {
			t.Errorf("held call %d of %d concurrent ones with Redis paused took %v: the calls are answered one after another", i, n, took[i].Round(time.Millisecond))
		}
	}
}

// TestAgentTasksTimeoutWhenRedisHangs: agent_tasks.timeout (500ms by
// default) is documented to bound each Redis command of the A2A task
// owners, after which the task is "not found". The client comes from
// dialRedis, whose go-redis options ignore a context's deadline on reads,
// so with the Redis paused an owner lookup waits for go-redis's own 3s
// read timeout (and more) instead: the same cause as
// TestRateLimitTimeoutWhenRedisHangs.
func TestAgentTasksTimeoutWhenRedisHangs(t *testing.T) {
	srv := redistest.Start(t)
	s, err := newRedisTasks(t.Context(), agentTasksConfig{RedisURL: srv.URL(), Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.c.Close() })
	if _, err := s.Claim(t.Context(), "a\x00t1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	began := time.Now()
	_, _, err = s.Owner(t.Context(), "a\x00t1")
	took := time.Since(began)
	if err == nil {
		t.Error("Owner with Redis paused: no error")
	}
	if took > time.Second {
		t.Errorf("Owner with Redis paused took %v; agent_tasks.timeout is 200ms", took.Round(time.Millisecond))
	}
}

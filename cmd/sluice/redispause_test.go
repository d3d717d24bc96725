package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/deadpeer"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/inventory"
)

// TestServeRedisClientPause: one real redis-server behind every shared
// store of a gateway (route memory, rate limits, approvals, agent tasks),
// held by CLIENT PAUSE ALL: connections stay open, nothing answers, and
// the commands sent meanwhile run late, once the pause ends. Each call
// that needs Redis is denied with policy_error within its store's bound
// (none is allowed, none hangs); once the pause ends calls are decided
// again without a restart (go-redis closes a connection whose command
// timed out, and Redis drops a closed client's paused command: the
// approvals lock it would have taken late is not left behind); and a
// shutdown while Redis is paused ends within shutdown_timeout, a call
// waiting on a store cut off.
func TestServeRedisClientPause(t *testing.T) {
	srv := redistest.Start(t)
	url := srv.URL()
	g := startServe(t, `shutdown_timeout: 1s
policy:
  default: allow
  result_mode: tool_result
  require_approval: [add]
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no sink after a sensitive read}
route_memory: {redis_url: "`+url+`", key_prefix: "rm:", timeout: 200ms}
rate_limits:
  redis_url: "`+url+`"
  key_prefix: "rl:"
  timeout: 200ms
  rules:
    - {id: per-agent, by: [principal], tool: echo, rate: 100/s}
approvals: {redis_url: "`+url+`", key_prefix: "{ap}:"}
agent_tasks: {redis_url: "`+url+`", timeout: 200ms}
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	add := `{"name":"add","arguments":{"a":1,"b":2}}`
	timed := func(agent, name, params string) (string, time.Duration) {
		start := time.Now()
		got := modernCallAs(t, g.url, agent, "tools/call", name, params)
		return got, time.Since(start)
	}
	if got, _ := timed("alice", "echo", echo); !strings.Contains(got, "hi") || strings.Contains(got, `"isError":true`) {
		t.Fatalf("echo with Redis up: %s", got)
	}
	if got, _ := timed("alice", "add", add); !strings.Contains(got, "approval_required") {
		t.Fatalf("add with Redis up: %s, want it held", got)
	}

	ends := srv.ClientPause(t, 6*time.Second)
	for _, c := range []struct {
		name, params string
		within       time.Duration
	}{
		// route memory and the rate limit: 200ms each.
		{"echo", echo, 2 * time.Second},
		// approvals: the approvals store's lock, 2s per attempt, twice.
		{"add", add, 7 * time.Second},
	} {
		got, took := timed("bob", c.name, c.params)
		if !strings.Contains(got, "policy_error") || took > c.within {
			t.Errorf("%s with Redis paused: got %.200s after %s, want policy_error within %s", c.name, got, took.Round(time.Millisecond), c.within)
		}
		t.Logf("%s with Redis paused: denied after %s", c.name, took.Round(time.Millisecond))
	}

	time.Sleep(time.Until(ends))
	unpaused := time.Now()
	for _, c := range []struct{ name, params, want string }{{"echo", echo, `Echo: hi`}, {"add", add, "approval_required"}} {
		for {
			got, _ := timed("carol", c.name, c.params)
			if strings.Contains(got, c.want) {
				t.Logf("%s decided again %s after the pause ended", c.name, time.Since(unpaused).Round(time.Millisecond))
				break
			}
			if time.Since(unpaused) > 30*time.Second {
				t.Fatalf("%s 30s after the pause ended: %.300s", c.name, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	srv.ClientPause(t, 6*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// In flight as the gateway stops, waiting on the approvals store.
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"dave","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		resp, err := openPost(context.Background(), g.url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"}, body)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- g.stop() }()
	select {
	case <-stopped:
		t.Logf("stopped %s after its context ended, Redis paused", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		// The call in flight waits 4s for the approvals store.
		t.Errorf("serve still running %s after its context ended, Redis paused, with shutdown_timeout 1s", time.Since(start).Round(time.Millisecond))
	}
	<-done
}

// TestServeStartRedisSilent: each Redis a config names accepts the
// connection and never answers. serve does not start, and says which
// key's Redis did not answer, within its start-up bound (5 s; route
// memory's timeout); a signal meanwhile stops it within 2 s.
func TestServeStartRedisSilent(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "inventory-key.pem")
	if _, err := inventory.LoadOrCreateKey(keyFile); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, names, yaml string }{
		{"route_memory", "route_memory.redis_url", "route_memory: {redis_url: \"redis://ADDR/0\"}\n"},
		{"rate_limits", "rate_limits.redis_url", "rate_limits: {redis_url: \"redis://ADDR/0\", rules: [{id: r, by: [principal], rate: 10/s}]}\n"},
		{"approvals", "approvals.redis_url", "approvals: {redis_url: \"redis://ADDR/0\"}\n"},
		{"agent_tasks", "agent_tasks.redis_url", "agent_tasks: {redis_url: \"redis://ADDR/0\"}\n"},
		{"inventory", "inventory.redis_url", "inventory: {redis_url: \"redis://ADDR/0\", key_file: \"" + keyFile + "\"}\n"},
	} {
		t.Run(c.key, func(t *testing.T) {
			t.Parallel() // each waits on its silent peer
			yaml := "listen: 127.0.0.1:0\npolicy: {default: allow}\nupstreams: [{name: demo, url: \"http://127.0.0.1:1/mcp\"}]\n" +
				strings.ReplaceAll(c.yaml, "ADDR", deadpeer.Silent(t))
			for _, signal := range []bool{false, true} {
				cfg, err := parseConfig("test", []byte(yaml))
				if err != nil {
					t.Fatal(err)
				}
				cfg.DataDir = t.TempDir()
				ctx, cancel := context.WithCancel(context.Background())
				if signal {
					time.AfterFunc(300*time.Millisecond, cancel)
				}
				start := time.Now()
				err = serve(ctx, cfg, slog.New(slog.DiscardHandler), func(bound) { t.Error("serve started with its Redis not answering") })
				took := time.Since(start)
				cancel()
				// A signal is heard at the read deadline of the command
				// under way (go-redis reads to a deadline, not a
				// cancellation): 2 s at most.
				bound := 7 * time.Second
				if signal {
					bound = 3 * time.Second
				}
				if err == nil || took > bound || !signal && !strings.Contains(err.Error(), c.names) {
					t.Errorf("signal %v: serve returned %v after %s; want an error naming %s within %s", signal, err, took.Round(time.Millisecond), c.names, bound)
				}
			}
		})
	}
}

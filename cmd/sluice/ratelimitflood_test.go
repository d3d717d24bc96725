package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRateLimitInventedTools (found by an identity review): through a
// real sluice serve, an agent limited to 3/h per tool does not get more
// by calling made-up tools until its spent echo bucket is pushed out of
// the in-process table (max_keys) and comes back full. Before, every 20
// made-up calls gave it 3 more echo calls.
func TestRateLimitInventedTools(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  max_keys: 20
  rules: [{id: per-tool, by: [principal, tool], rate: 3/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	served := 0
	for round := range 3 {
		for range 3 {
			if got := modernCallAs(t, g.url, "mallory", "tools/call", "echo", echo); strings.Contains(got, "Echo: hi") {
				served++
			}
		}
		for i := range 25 {
			name := fmt.Sprintf("made_up_%d_%d", round, i)
			for range 3 { // spent too, so none is full before echo
				modernCallAs(t, g.url, "mallory", "tools/call", name, `{"name":"`+name+`","arguments":{}}`)
			}
		}
	}
	if served != 3 {
		t.Errorf("echo calls served under 3/h: got %d, want 3", served)
	}
}

// TestRateLimitTableFullEvent: past its max_keys_per_agent, an agent's
// call that needs a new bucket is a soft rate_limited deny with a
// retry-after that says the limiter's table is full, recorded as an
// event; another agent is served. Without auth an agent's share is its
// client's (TestAttackRenamedAgentsFillRateLimitTable): the two come from
// two addresses, named by a trusted proxy.
func TestRateLimitTableFullEvent(t *testing.T) {
	srv := redistest.Start(t)
	for name, store := range map[string]string{"in process": "", "redis": `redis_url: "` + srv.URL() + `"`} {
		t.Run(name, func(t *testing.T) {
			g := startServe(t, `policy: {default: allow, result_mode: tool_result}
trusted_proxies: [127.0.0.1]
rate_limits:
  `+store+`
  max_keys: 100
  max_keys_per_agent: 4
  rules: [{id: per-tool, by: [principal, tool], rate: 3/h}]
`)
			from := map[string]*http.Client{
				"mallory": forwardingFor("127.0.0.1", func(int) string { return "192.0.2.7" }),
				"bob":     forwardingFor("127.0.0.1", func(int) string { return "192.0.2.8" }),
			}
			call := func(agent, name string) string {
				return modernCallFrom(t, from[agent], g.url, agent, "tools/call", name, `{"name":"`+name+`","arguments":{"message":"hi"}}`)
			}
			for i := range 4 {
				call("mallory", fmt.Sprint("made_up_", i))
			}
			got := call("mallory", "echo")
			if !strings.Contains(got, `"code":"rate_limited"`) || !strings.Contains(got, `"retry_after_ms"`) || !strings.Contains(got, "table is full") {
				t.Errorf("mallory's fifth tool: %s; want rate_limited, a retry-after and the table full", got)
			}
			if got := call("bob", "echo"); !strings.Contains(got, "Echo: hi") {
				t.Errorf("bob's echo after mallory filled her share: %s", got)
			}
			if err := g.stop(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "table is full") {
				t.Errorf("no event says the table is full: %s", out.String())
			}
		})
	}
}

// TestRateLimitsRefuseEvictingRedis: a Redis that may evict keys when
// full could drop a spent bucket, which would come back full; rate_limits
// refuses it at start-up, as route memory does.
func TestRateLimitsRefuseEvictingRedis(t *testing.T) {
	refusesEvictingRedis(t, func(ctx context.Context, url string) error {
		c := &rateLimitsConfig{RedisURL: url, Rules: []rateRuleConfig{{ID: "a", Rate: "1/s"}}}
		_, closeLim, err := c.limiter(ctx)
		if closeLim != nil {
			closeLim()
		}
		return err
	})
}

// refusesEvictingRedis checks that open, starting what keeps state in the
// Redis at url, refuses a server that may evict keys (maxmemory set, a
// policy other than noeviction), naming noeviction, and takes the others.
func refusesEvictingRedis(t *testing.T, open func(ctx context.Context, url string) error) {
	t.Helper()
	srv := redistest.Start(t)
	ctx := t.Context()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opt)
	defer admin.Close()
	for _, tt := range []struct {
		maxmemory, policy string
		ok                bool
	}{
		{"0", "allkeys-lru", true},
		{"100mb", "noeviction", true},
		{"100mb", "allkeys-lru", false},
		{"100mb", "volatile-lru", false},
	} {
		if err := admin.ConfigSet(ctx, "maxmemory", tt.maxmemory).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory-policy", tt.policy).Err(); err != nil {
			t.Fatal(err)
		}
		if err := open(ctx, srv.URL()); tt.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "noeviction")) {
			t.Errorf("maxmemory %s, policy %s: got %v, want ok=%v (an error naming noeviction)", tt.maxmemory, tt.policy, err, tt.ok)
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAgentTasksRefusesEvictingRedis: agent_tasks' Redis holds, besides
// task owners, the ids a sealed session's open requests wait on (PX keys)
// and the requests whose stream broke off, which stop a request reusing
// one: each a key an evicting server (allkeys-*, or volatile-* for these
// keys with a TTL) drops under memory pressure, and with it the refusal,
// so that an upstream answering by id has the one request's answer
// screened as the other's (a tools/list's as a tools/call's, its hidden
// tools passed on). It was taken whatever its maxmemory-policy; it is
// refused at start, as route memory's and rate limits' are.
func TestAgentTasksRefusesEvictingRedis(t *testing.T) {
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
		rt, err := newRedisTasks(ctx, agentTasksConfig{RedisURL: srv.URL()})
		if rt != nil {
			rt.c.Close()
		}
		if tt.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "noeviction")) {
			t.Errorf("maxmemory %s, policy %s: got %v, want ok=%v (an error naming noeviction)", tt.maxmemory, tt.policy, err, tt.ok)
		}
	}
}

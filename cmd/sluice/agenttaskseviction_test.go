package main

import (
	"context"
	"testing"
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
	refusesEvictingRedis(t, func(ctx context.Context, url string) error {
		rt, err := newRedisTasks(ctx, agentTasksConfig{RedisURL: url})
		if rt != nil {
			rt.c.Close()
		}
		return err
	})
}

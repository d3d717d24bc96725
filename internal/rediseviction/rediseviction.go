// Package rediseviction tells whether a Redis server may evict keys when
// it runs out of memory: state whose loss reads as a fresh start (route
// memory, a spent rate-limit bucket) must not be kept on such a server.
package rediseviction

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Policy returns the server's maxmemory-policy and maxmemory when it may
// evict keys (maxmemory set and a policy other than noeviction), and evicts
// false when it may not. It asks CONFIG GET, and INFO memory where CONFIG
// is not allowed (managed services rename or forbid it, and their default
// policy, volatile-lru, evicts keys with a TTL: memories and buckets); a
// server that answers neither is not checked.
func Policy(ctx context.Context, c redis.Cmdable) (policy, maxmemory string, evicts bool) {
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err == nil {
		return evicting(cfg["maxmemory-policy"], cfg["maxmemory"])
	}
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", "", false
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return evicting(fields["maxmemory_policy"], fields["maxmemory"])
}

func evicting(p, mm string) (policy, maxmemory string, evicts bool) {
	if mm != "" && mm != "0" && p != "" && p != "noeviction" {
		return p, mm, true
	}
	return "", "", false
}

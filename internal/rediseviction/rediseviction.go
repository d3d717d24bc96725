// Package rediseviction tells whether a Redis server may evict keys when
// it runs out of memory: state whose loss reads as a fresh start (route
// memory, a spent rate-limit bucket) must not be kept on such a server.
package rediseviction

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Policy returns the server's maxmemory-policy and maxmemory when it may
// evict keys (maxmemory set and a policy other than noeviction), and evicts
// false when it may not, or does not allow CONFIG GET (some managed
// services), which is then not checked.
func Policy(ctx context.Context, c redis.Cmdable) (policy, maxmemory string, evicts bool) {
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return "", "", false
	}
	mm, p := cfg["maxmemory"], cfg["maxmemory-policy"]
	if mm != "" && mm != "0" && p != "" && p != "noeviction" {
		return p, mm, true
	}
	return "", "", false
}

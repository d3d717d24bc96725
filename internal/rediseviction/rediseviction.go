// Package rediseviction tells whether a Redis server may evict keys when
// it runs out of memory: state whose loss reads as a fresh start (route
// memory, a spent rate-limit bucket) must not be kept on such a server.
package rediseviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Policy returns the server's maxmemory-policy and maxmemory when it may
// evict keys (maxmemory set and a policy other than noeviction), and evicts
// false when it may not. It asks CONFIG GET, and INFO memory where CONFIG
// is not allowed (managed services rename or forbid it, and their default
// policy, volatile-lru, evicts keys with a TTL: memories and buckets); a
// server that refuses both (an error reply) is not checked. A server that
// does not answer (a timeout, a broken connection) or answers that it
// cannot now (BUSY with a script, LOADING) is an error: it was taken as
// one refusing both, and a Redis stalled at start-up passed the check
// whatever its policy.
func Policy(ctx context.Context, c redis.Cmdable) (policy, maxmemory string, evicts bool, err error) {
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err == nil {
		policy, maxmemory, evicts = evicting(cfg["maxmemory-policy"], cfg["maxmemory"])
		return policy, maxmemory, evicts, nil
	}
	if !refused(err) {
		return "", "", false, fmt.Errorf("asking its maxmemory-policy (CONFIG GET): %w", err)
	}
	info, err := c.Info(ctx, "memory").Result()
	if refused(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("asking its maxmemory-policy (INFO memory): %w", err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	policy, maxmemory, evicts = evicting(fields["maxmemory_policy"], fields["maxmemory"])
	return policy, maxmemory, evicts, nil
}

// refused reports whether err is the server's error reply (NOPERM, an
// unknown or renamed command), not a failure to hear one nor a reply
// saying it cannot run the command now (notNow).
func refused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	code, _, _ := strings.Cut(reply.Error(), " ")
	return !slices.Contains(notNow, code)
}

// notNow are the codes of error replies from a server that cannot answer
// at the moment, whatever its ACL: one busy with a script past
// busy-reply-threshold (BUSY answers CONFIG and INFO alike), loading its
// data, or cut off from its primary or cluster. Taken as refusals, a
// long script running as the gateway started left an evicting server
// unchecked.
var notNow = []string{"BUSY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"}

func evicting(p, mm string) (policy, maxmemory string, evicts bool) {
	if mm != "" && mm != "0" && p != "" && p != "noeviction" {
		return p, mm, true
	}
	return "", "", false
}

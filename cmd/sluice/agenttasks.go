package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/rediseviction"
)

// agentTasksConfig is the agent_tasks: section: where the owners of tasks
// live, A2A tasks and MCP tasks alike. Without redis_url, in each replica's
// memory: a task created through one replica is "not found" through
// another. With session_keys, its Redis also shares between replicas what
// a sealed session's exchanges leave for one another (see
// gateway.Options.Exchanges).
type agentTasksConfig struct {
	// RedisURL shares task owners between replicas.
	RedisURL string `yaml:"redis_url"`
	// KeyPrefix of the Redis keys (default "sluice:a2a:task:").
	KeyPrefix string `yaml:"key_prefix"`
	// TTL is how long an owner is kept after the task is created (default
	// 168h).
	TTL time.Duration `yaml:"ttl"`
	// Timeout bounds each Redis command (default 500ms); a store that does
	// not answer makes the task "not found" (fail closed).
	Timeout time.Duration `yaml:"timeout"`
}

// sessionKeyInfix follows agent_tasks.key_prefix in the keys of sealed
// sessions' exchanges (gateway/redisstore): A2A task keys go on with an
// agent's name and MCP task keys with "\x00mcp\x00", so none is one.
const sessionKeyInfix = "\x00session\x00"

// loggedTasks is the MCP tasks' store: it logs what fails (the
// Interceptor, failing closed, does not).
type loggedTasks struct {
	s   *redisTasks
	log *slog.Logger
}

func (l *loggedTasks) Claim(ctx context.Context, key, owner string) (string, error) {
	first, err := l.s.Claim(ctx, key, owner)
	if err != nil {
		l.log.Warn("MCP task owner not recorded: the shared store did not answer; the task is \"not found\" until it answers again", "err", err)
	}
	return first, err
}

func (l *loggedTasks) Owner(ctx context.Context, key string) (string, bool, error) {
	owner, ok, err := l.s.Owner(ctx, key)
	if err != nil {
		l.log.Warn("MCP task owner unknown: the shared store did not answer; the task is \"not found\"", "err", err)
	}
	return owner, ok, err
}

// redisTasks is a2a.TaskStore in Redis.
type redisTasks struct {
	c       *redis.Client
	prefix  string
	ttl     time.Duration
	timeout time.Duration
}

func newRedisTasks(ctx context.Context, cfg agentTasksConfig) (*redisTasks, error) {
	c, err := dialRedis(ctx, "agent_tasks.redis_url", cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	// Refuse a server that may evict keys under memory pressure: an
	// evicted hold of a sealed session's request id, or a broken-off
	// request, would let a request reuse its id, and the upstream's
	// answer to the one be screened as the other's
	// (TestAgentTasksRefusesEvictingRedis).
	policy, mm, evicts, err := rediseviction.Policy(ctx, c)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("agent_tasks.redis_url: the server did not say whether it may evict keys: %w", err)
	}
	if evicts {
		c.Close()
		return nil, fmt.Errorf("agent_tasks.redis_url: maxmemory-policy is %s with maxmemory %s, so Redis may evict the ids sealed sessions' requests hold, which would let a request take another's answer, and task owners; set maxmemory-policy noeviction (or maxmemory 0) on the server sluice uses", policy, mm)
	}
	s := &redisTasks{c: c, prefix: cfg.KeyPrefix, ttl: cfg.TTL, timeout: cfg.Timeout}
	if s.prefix == "" {
		s.prefix = "sluice:a2a:task:"
	}
	if s.ttl <= 0 {
		s.ttl = 7 * 24 * time.Hour
	}
	if s.timeout <= 0 {
		s.timeout = 500 * time.Millisecond
	}
	return s, nil
}

func (s *redisTasks) Claim(ctx context.Context, key, owner string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// "o:" so that an empty owner (no authentication) is still one.
	set, err := s.c.SetNX(ctx, s.prefix+key, "o:"+owner, s.ttl).Result()
	if err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	if set {
		return owner, nil
	}
	first, ok, err := s.Owner(ctx, key)
	if err == nil && !ok {
		err = errors.New("redis: the task's owner expired as it was claimed")
	}
	return first, err
}

func (s *redisTasks) Owner(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.c.Get(ctx, s.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("redis: %w", err)
	}
	owner, ok := strings.CutPrefix(v, "o:")
	return owner, ok, nil
}

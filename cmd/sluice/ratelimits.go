package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/ratelimit"
)

// rateLimitsConfig is the `rate_limits:` section: token buckets that soft-
// deny a call with rate_limited (and a retry-after hint) once empty.
//
//	rate_limits:
//	  redis_url: redis://redis:6379/0   # shared by every replica; empty: in this process
//	  rules:
//	    - {id: per-agent, by: [principal], rate: 60/m, burst: 20}
//	    - {id: github-writes, by: [principal], upstream: github, tool: "create_*", rate: 10/h}
//	    - {id: everything, rate: 500/s}
type rateLimitsConfig struct {
	// RedisURL (redis://, rediss:// or unix://, ${VAR} expanded) keeps
	// the buckets in Redis so every replica draws from the same ones;
	// empty keeps them in this process. When Redis cannot be reached a
	// call under a limit is denied with policy_error.
	RedisURL string `yaml:"redis_url"`
	// KeyPrefix of the buckets' Redis keys (default "sluice:ratelimit:").
	KeyPrefix string `yaml:"key_prefix"`
	// Timeout of one bucket check in Redis (default 200ms).
	Timeout time.Duration `yaml:"timeout"`
	// MaxKeys bounds the in-process buckets (default 100000). Only a
	// bucket full again is dropped (it carries nothing); when every one
	// is spent, a call that needs a new bucket is refused (rate_limited,
	// the table is full) rather than a spent bucket forgotten.
	MaxKeys int `yaml:"max_keys"`
	// MaxKeysPerAgent bounds the buckets one agent's calls hold, in
	// process or in Redis (default 1000, or max_keys/10 in process if
	// less; never more than max_keys): an agent
	// calling made-up tools fills its own share and is refused new
	// buckets, not other agents.
	MaxKeysPerAgent int `yaml:"max_keys_per_agent"`
	// Rules are checked in order; a call takes a token from each rule it
	// matches, and the first empty bucket refuses it.
	Rules []rateRuleConfig `yaml:"rules"`
}

// rateRuleConfig is one rule of rate_limits.rules.
type rateRuleConfig struct {
	// ID names the rule in denials and events; required, unique.
	ID string `yaml:"id"`
	// By: principal, client (the caller's address: an IP, an IPv6 /64,
	// every loopback address one; one bucket over stdio), upstream and/or tool, each distinct value
	// getting its own bucket; empty: one bucket for all matching calls.
	// Without auth every caller is one principal, whatever name it gives
	// (as to route memory); client gives each address its own bucket.
	By []string `yaml:"by"`
	// Upstream and Tool restrict the rule to matching calls (glob
	// patterns; reads are resource:URI and prompt:NAME).
	Upstream string `yaml:"upstream"`
	Tool     string `yaml:"tool"`
	// Rate: N/s, N/m, N/h or N/<duration>.
	Rate string `yaml:"rate"`
	// Burst is how many calls may come at once (default: N of the rate).
	Burst int `yaml:"burst"`
}

// rules checks the section and compiles its rules, naming the key at
// fault.
func (c *rateLimitsConfig) rules() ([]govern.RateRule, error) {
	if c.Timeout < 0 || c.MaxKeys < 0 || c.MaxKeysPerAgent < 0 {
		return nil, fmt.Errorf("rate_limits: timeout, max_keys and max_keys_per_agent must not be negative (0 for the default)")
	}
	if len(c.Rules) == 0 && c.RedisURL != "" {
		return nil, fmt.Errorf("rate_limits: redis_url is set but there are no rules; add rules or remove rate_limits")
	}
	var out []govern.RateRule
	seen := map[string]bool{}
	for i, r := range c.Rules {
		where := fmt.Sprintf("rate_limits.rules[%d]", i)
		if r.ID == "" {
			return nil, fmt.Errorf("%s: id is required (it names the limit in denials)", where)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%s: id %q is used twice; ids must be unique", where, r.ID)
		}
		seen[r.ID] = true
		for _, b := range r.By {
			if !slices.Contains([]string{"principal", "client", "upstream", "tool"}, b) {
				return nil, fmt.Errorf("%s (%s): by: %q is not principal, client, upstream or tool", where, r.ID, b)
			}
		}
		lim, err := ratelimit.ParseLimit(r.Rate, r.Burst)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", where, r.ID, err)
		}
		for _, p := range []string{r.Upstream, r.Tool} {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%s (%s): pattern %q: %w", where, r.ID, p, err)
			}
		}
		if n := policy.NormalName(r.Tool); strings.HasPrefix(n, intercept.ResourcePrefix) && !sameGlob(r.Tool, n) {
			// Matched in the normal form of reads, whose URI escapes a *
			// in a path (%2A) and a [ (%5B) and cuts a file URI's ? as its
			// query: the pattern would match no read, and its limit never
			// apply.
			return nil, fmt.Errorf("%s (%s): pattern %q: reads are matched in their URI's normal form, which does not keep this pattern's * ? or [ (it reads %q); "+
				"end the pattern with * for a prefix (resource:file:///srv/*) and write the rest of the URI without glob characters", where, r.ID, r.Tool, n)
		}
		out = append(out, govern.RateRule{ID: r.ID, By: r.By, Upstream: r.Upstream, Tool: r.Tool, Limit: lim})
	}
	return out, nil
}

// sameGlob reports whether pattern's normal form n keeps its glob
// characters.
func sameGlob(pattern, n string) bool {
	for _, c := range []string{"*", "?", "["} {
		if strings.Count(pattern, c) != strings.Count(n, c) {
			return false
		}
	}
	return true
}

// limiter is the buckets' store: Redis when redis_url is set (checked
// with a PING, and refused if it may evict keys; an unreachable server at
// start-up is an error), else the process. close releases it.
func (c *rateLimitsConfig) limiter(ctx context.Context) (l ratelimit.Limiter, close func(), err error) {
	if c.RedisURL == "" {
		return ratelimit.NewLocal(ratelimit.LocalOptions{MaxKeys: c.MaxKeys, MaxKeysPerOwner: c.MaxKeysPerAgent}), func() {}, nil
	}
	client, err := dialRedis(ctx, "rate_limits.redis_url", c.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	prefix := c.KeyPrefix
	if prefix == "" {
		prefix = "sluice:ratelimit:"
	}
	r := ratelimit.NewRedis(client, ratelimit.RedisOptions{Prefix: prefix, Timeout: c.Timeout, MaxKeysPerOwner: c.MaxKeysPerAgent})
	if err := r.CheckEviction(ctx); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("rate_limits.redis_url: %w", err)
	}
	return r, func() { _ = client.Close() }, nil
}

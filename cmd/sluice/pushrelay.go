package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/auth"
)

// pushRelayConfig is the push_relay: section: A2A push notifications
// relayed through the gateway (README, A2A; a2a.Options.PushRelay).
type pushRelayConfig struct {
	// Enabled relays every push config a caller registers: the agent is
	// given the gateway's URL (public_url/a2a/.push/{id}) and token, and
	// the gateway delivers each push to the caller's URL while the
	// caller's credential holds. Unset: on with auth: when public_url is
	// set; off otherwise (with auth:, push configs are then refused).
	Enabled *bool `yaml:"enabled"`
	// Timeout bounds one delivery to a caller's URL (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// MaxConcurrent bounds the deliveries at once (default 64), a quarter
	// of them (at least one) to one principal's URLs; past either an
	// agent's push is answered 503.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxRelays bounds the push configs relayed (default 10,000), a tenth
	// of them per principal; when full, the principal holding the most
	// gives up its oldest to one holding fewer.
	MaxRelays int `yaml:"max_relays"`
	// TTL ends a relay unused this long (default 24h).
	TTL time.Duration `yaml:"ttl"`
}

// pushRelay reports whether push notifications are relayed, or why the
// config cannot relay them.
func (c *config) pushRelay() (bool, error) {
	on := c.Auth != nil && c.PublicURL != ""
	if c.PushRelay.Enabled != nil {
		on = *c.PushRelay.Enabled
	}
	if on && c.PublicURL == "" {
		return false, errors.New("push_relay.enabled needs public_url, the URL agents reach the gateway at (https://gw.example.com): they POST their push notifications there; set public_url, or push_relay.enabled: false")
	}
	if c.PushRelay.Timeout < 0 || c.PushRelay.TTL < 0 || c.PushRelay.MaxConcurrent < 0 || c.PushRelay.MaxRelays < 0 {
		return false, errors.New("push_relay: timeout, ttl, max_concurrent and max_relays must not be negative (0 takes the default)")
	}
	return on, nil
}

// withPushRelay sets o's push relay from the config.
func (c *config) withPushRelay(o *a2a.Options, on bool) {
	o.PushRelay = on
	o.PushTimeout, o.PushDeliveries = c.PushRelay.Timeout, c.PushRelay.MaxConcurrent
	o.MaxPushRelays, o.PushRelayTTL = c.PushRelay.MaxRelays, c.PushRelay.TTL
}

// pushRelayOpen serves an agent's push to a relay (a2a.IsPushRelay) with
// open, past authn: the agent is not a caller, and the relay's token is
// what it authenticates with. A push the relay delivered that comes back
// to the gateway (a2a.DeliveredByRelay) is refused on every path, MCP's
// too, before authn could take the caller's credentials it carries.
// Everything else goes to authed.
func pushRelayOpen(open, authed http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a2a.DeliveredByRelay(r) {
			a2a.LoopDetected(w)
			return
		}
		if a2a.IsPushRelay(r) {
			open.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// relayKeyInfix follows agent_tasks.key_prefix in the keys of shared push
// relays: A2A task keys go on with an agent's name, which holds no NUL,
// MCP task keys with "\x00mcp\x00" and sealed sessions' with
// sessionKeyInfix, so none is one.
const relayKeyInfix = "\x00relay\x00"

// redisRelays is a2a.RelayStore in the agent_tasks Redis: one key per
// relay, its value sealed by the a2a package, expiring with the relay's
// TTL; each command bounded by agent_tasks.timeout.
type redisRelays struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration
}

var _ a2a.RelayStore = (*redisRelays)(nil)

func (s *redisRelays) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

func (s *redisRelays) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b, err := s.c.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis: %w", err)
	}
	return b, true, nil
}

func (s *redisRelays) Renew(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var ok bool
	var err error
	if value == nil {
		ok, err = s.c.PExpire(ctx, s.prefix+key, ttl).Result()
	} else {
		ok, err = s.c.SetXX(ctx, s.prefix+key, value, ttl).Result()
	}
	if err != nil {
		return false, fmt.Errorf("redis: %w", err)
	}
	return ok, nil
}

func (s *redisRelays) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.Del(ctx, s.prefix+key).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// withSharedRelays keeps o's relays in the agent_tasks Redis, sealed with
// the session_keys, when both are set; authn (made after the gateway,
// asked when a push comes) checks an API key, or a JWT's signing key and a
// token's or certificate's agent name, again for a replica that did not
// take the relay's registration. It returns a warning when Redis is set without keys:
// relays then stay in each replica rather than sit in Redis in clear.
func (c *config) withSharedRelays(o *a2a.Options, tasks *redisTasks, authn func() *auth.Authenticator) string {
	if !o.PushRelay || tasks == nil {
		return ""
	}
	if len(c.sessionKeys) == 0 {
		return "A2A push relays stay in the replica that registered them (an agent's push that reaches another replica is answered 404): set session_keys, with which agent_tasks.redis_url keeps them sealed for every replica"
	}
	o.Relays = &redisRelays{c: tasks.c, prefix: tasks.prefix + relayKeyInfix, timeout: tasks.timeout}
	o.RelayKeys = c.sessionKeys
	o.RecheckKey = func(id string) error { return authn().KeyHolds(id) }
	o.RecheckJWTKey = func(ref string) error { return authn().JWTKeyPublished(ref) }
	o.RecheckAgent = func(agent string) error { return authn().AgentNameHolds(agent) }
	return ""
}

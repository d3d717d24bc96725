package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackLongNamesBoundRedisKeys: without auth an agent is what the
// client calls itself (initialize's clientInfo.name), as long as a
// request (max_body_bytes, 4 MiB), and each call of a source a route
// rule remembers wrote the name whole into two Redis keys (the agent's
// memory and the session's), kept for route_memory.ttl (30 days) on a
// server that must not evict: a client renaming itself made Redis hold
// 8 MiB a call until it was full, and then every agent's source calls
// were denied. A memory's key now names a long agent or session by its
// SHA-256, and still tells agents apart.
func TestAttackLongNamesBoundRedisKeys(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s, err := New(ctx, Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := policy.Compile([]byte(`
default: allow
tool_classes:
  read_secret: [source:sensitive]
  post: [sink:network]
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
  - {id: no-exfil-session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: session}
`), "long.yaml", policy.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	long := "mallory" + strings.Repeat("x", 1<<20)
	longSession := "s-" + strings.Repeat("y", 1<<20)
	read := &intercept.ActionDescriptor{ToolName: "read_secret", Upstream: "up", Agent: long + "1", SessionID: longSession, Parameters: []byte("{}")}
	dec, err := p.Decide(ctx, read)
	if err != nil || dec.Verdict != intercept.Allow {
		t.Fatalf("the sensitive read: %s/%s %v, want allow", dec.Verdict, dec.Reason, err)
	}
	if err := p.Forwarded(ctx, read, dec); err != nil {
		t.Fatal(err)
	}

	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	if total > 64<<10 {
		t.Errorf("one call of an agent with a 1 MiB name in a session with a 1 MiB id wrote %d bytes of Redis keys (%d keys), to be kept for the memory's TTL", total, len(keys))
	}

	for _, c := range []struct {
		agent, session string
		denied         bool
	}{
		{long + "1", longSession, true},         // the same agent and session
		{long + "1", "other", true},             // the agent's memory
		{long + "2", longSession, false},        // another agent, whose name differs in its last byte
		{"mallory", longSession, false},         // another agent
		{long[:1024] + "1", longSession, false}, // a prefix of the name is another agent
	} {
		sink := &intercept.ActionDescriptor{ToolName: "post", Upstream: "up", Agent: c.agent, SessionID: c.session, Parameters: []byte("{}")}
		got, _ := p.Decide(ctx, sink)
		if denied := got.Verdict != intercept.Allow; denied != c.denied {
			t.Errorf("agent of %d bytes, session of %d: the sink is %s/%s, want denied %v", len(c.agent), len(c.session), got.Verdict, got.Reason, c.denied)
		}
	}
}

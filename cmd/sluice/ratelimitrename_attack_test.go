package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackRenamedAgentsFillRateLimitTable: each agent may hold
// max_keys_per_agent buckets, so that one inventing names fills only its
// own share. Without auth an agent is the name its client gives, at every
// 2026-07-28 call: a client naming itself afresh at each call (under a
// rule by principal then, which now keys every unauthenticated caller
// alike; here by client and tool) made a spent bucket per
// name, each its own "agent's",
// until the in-process table (max_keys) held nothing but spent buckets
// and every other client's first call was refused "the rate limiter's
// table is full" for the rule's whole window; in Redis, which has no
// bound but the per-agent one, the keys grew without bound. An
// unauthenticated call's buckets now count for its client address, as
// held approvals, cursors, states and tasks do.
func TestAttackRenamedAgentsFillRateLimitTable(t *testing.T) {
	srv := redistest.Start(t)
	for name, store := range map[string]string{"in process": "", "redis": `redis_url: "` + srv.URL() + `"`} {
		t.Run(name, func(t *testing.T) {
			// Two clients, at the addresses a trusted proxy names.
			g := startServe(t, `policy: {default: allow, result_mode: tool_result}
trusted_proxies: [127.0.0.1]
rate_limits:
  `+store+`
  max_keys: 20
  max_keys_per_agent: 2
  rules: [{id: per-tool, by: [client, tool], rate: 1/h}]
`)
			echo := `{"name":"echo","arguments":{"message":"hi"}}`
			mallory := forwardingFor("127.0.0.1", func(int) string { return "192.0.2.7" })
			alice := forwardingFor("127.0.0.1", func(int) string { return "192.0.2.8" })
			for i := range 30 {
				tool := []string{"echo", "add"}[i%2]
				modernCallFrom(t, mallory, g.url, fmt.Sprintf("mallory-%d-%s", i, strings.ReplaceAll(name, " ", "")), "tools/call", tool, `{"name":"`+tool+`","arguments":{}}`)
			}
			if got := modernCallFrom(t, alice, g.url, "alice-"+strings.ReplaceAll(name, " ", ""), "tools/call", "echo", echo); !strings.Contains(got, "Echo: hi") {
				t.Errorf("alice's first call, from another address, after a client renamed itself 30 times: %s; want it served", got)
			}
			if got := modernCallFrom(t, mallory, g.url, "mallory-again-"+strings.ReplaceAll(name, " ", ""), "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"x"}}`); !strings.Contains(got, "table is full") {
				t.Errorf("mallory under yet another name: %s; want rate_limited, the table full (her address's share)", got)
			}
		})
	}
}

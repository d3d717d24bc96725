package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackRenamedAgentEscapesPrincipalLimit: without auth a 2026-07-28
// client names itself afresh at each call, and by: [principal] keyed the
// name, so each call under a new name had a full bucket and a limit of 3
// let all 10 through. Every unauthenticated caller is now one principal
// to rate limits, as to route memory.
func TestAttackRenamedAgentEscapesPrincipalLimit(t *testing.T) {
	srv := redistest.Start(t)
	for name, store := range map[string]string{"in process": "", "redis": `redis_url: "` + srv.URL() + `"`} {
		t.Run(name, func(t *testing.T) {
			g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  `+store+`
  rules: [{id: per-agent, by: [principal], rate: 3/h}]
`)
			echo := `{"name":"echo","arguments":{"message":"hi"}}`
			served := 0
			for i := range 10 {
				got := modernCallAs(t, g.url, fmt.Sprintf("mallory-%d-%s", i, strings.ReplaceAll(name, " ", "")), "tools/call", "echo", echo)
				switch {
				case strings.Contains(got, "Echo: hi"):
					served++
				case !strings.Contains(got, "rate_limited"):
					t.Fatalf("call %d: got %s, want it served or rate_limited", i, got)
				}
			}
			if served != 3 {
				t.Errorf("calls of a client renaming itself at each call, under 3/h by principal: got %d served, want 3", served)
			}
		})
	}
}

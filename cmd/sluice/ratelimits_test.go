package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRateLimitsAcrossReplicas: two gateways share per-agent buckets in a
// real Redis, so an agent cannot get twice its limit by spreading its calls
// over replicas, nor by naming itself afresh; an empty bucket is a soft deny with a retry-after hint; a
// gateway whose Redis is gone denies with policy_error, and serves again
// once Redis is back, without a restart.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy: {default: allow, result_mode: tool_result}
rate_limits:
  redis_url: "` + srv.URL() + `"
  key_prefix: "test:rl:"
  rules:
    - {id: per-agent, by: [principal], tool: echo, rate: 2/h}
`
	a, b := startServe(t, cfg), startServe(t, cfg)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	for i, g := range []*running{a, b} {
		if got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo); strings.Contains(got, "rate_limited") || !strings.Contains(got, "hi") {
			t.Fatalf("alice's call %d: %s", i+1, got)
		}
	}
	got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo)
	if !strings.Contains(got, `"code":"rate_limited"`) || !strings.Contains(got, `"retry_after_ms":`) || !strings.Contains(got, `"isError":true`) {
		t.Errorf("alice's third call: %s; want a soft rate_limited deny with retry_after_ms", got)
	}
	// Without auth every caller is one principal, whatever name it gives
	// (TestAttackRenamedAgentEscapesPrincipalLimit).
	if got := modernCallAs(t, b.url, "bob", "tools/call", "echo", echo); !strings.Contains(got, `"code":"rate_limited"`) {
		t.Errorf("bob's first call, unauthenticated as alice is: %s; want rate_limited", got)
	}
	srv.Stop()
	if got := modernCallAs(t, b.url, "bob", "tools/call", "echo", echo); !strings.Contains(got, "policy_error") {
		t.Errorf("call with Redis gone: %s; want policy_error", got)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := modernCallAs(t, b.url, "bob", "tools/call", "echo", echo); strings.Contains(got, "policy_error") || !strings.Contains(got, "hi") {
		t.Errorf("call after Redis restarted: %s; want it served", got)
	}
}

func TestRateLimitsInProcess(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: everything, rate: 1/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	if got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo); strings.Contains(got, "rate_limited") {
		t.Fatalf("first call: %s", got)
	}
	if got := modernCallAs(t, g.url, "bob", "tools/call", "echo", echo); !strings.Contains(got, `"code":"rate_limited"`) {
		t.Errorf("second call under a global 1/h: %s", got)
	}
}

func TestRateLimitsConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"rate_limits: {rules: [{rate: 1/s}]}", "rate_limits.rules[0]: id is required"},
		{"rate_limits: {rules: [{id: a, rate: 1/s}, {id: a, rate: 2/s}]}", `rate_limits.rules[1]: id "a" is used twice`},
		{"rate_limits: {rules: [{id: a, by: [agent], rate: 1/s}]}", `by: "agent" is not principal, client, upstream or tool`},
		{"rate_limits: {rules: [{id: a, rate: lots}]}", `rate_limits.rules[0] (a): rate "lots"`},
		{"rate_limits: {rules: [{id: a, rate: 1/s, tool: \"[\"}]}", `pattern "["`},
		{"rate_limits: {redis_url: redis://x:6379}", "no rules"},
		{"rate_limits: {rules: [{id: a, rate: 1/s, brust: 3}]}", `did you mean "burst"`},
		// A read's pattern whose glob characters its URI's normal form
		// does not keep (escaped as %2A, %3F, %5B, or a file URI's ? cut as
		// a query) matched no read, its limit never applying
		// (TestAttackRateLimitReadPrefixNeverMatches, for a final *).
		{"rate_limits: {rules: [{id: a, rate: 1/s, tool: \"resource:file:///srv/*/key\"}]}", `rate_limits.rules[0] (a): pattern "resource:file:///srv/*/key"`},
		{"rate_limits: {rules: [{id: a, rate: 1/s, tool: \"resource:file:///srv/report-?.csv\"}]}", `pattern "resource:file:///srv/report-?.csv"`},
		{"rate_limits: {rules: [{id: a, rate: 1/s, tool: \"resource:https://intranet.example/[ab]/x\"}]}", `pattern "resource:https://intranet.example/[ab]/x"`},
	} {
		_, err := parseConfig("sluice.yaml", []byte(tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

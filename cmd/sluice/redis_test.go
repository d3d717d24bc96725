package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRouteMemoryAcrossReplicas runs two gateways sharing route memory in
// a real Redis: an agent reads a sensitive source through one, and the
// sink it then calls through the other is denied, as on a single gateway.
// Another agent is unaffected, and a gateway whose Redis is gone denies
// rather than forgets.
func TestRouteMemoryAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no sink after a sensitive read}
route_memory: {redis_url: "` + srv.URL() + `", key_prefix: "test:"}
`
	a, b := startServe(t, cfg), startServe(t, cfg)
	email := `{"name":"send_email","arguments":{"to":"x@example.com","subject":"s","body":"b"}}`
	if got := modernCallAs(t, b.url, "alice", "tools/call", "send_email", email); strings.Contains(got, "no-exfil") {
		t.Fatalf("sink before any source was denied: %s", got)
	}
	modernCallAs(t, a.url, "alice", "tools/call", "echo", `{"name":"echo","arguments":{"message":"salaries"}}`)
	if got := modernCallAs(t, b.url, "alice", "tools/call", "send_email", email); !strings.Contains(got, `"matched_route_rule_id":"no-exfil"`) {
		t.Errorf("sink through the other replica after a source: got %s, want a deny by no-exfil", got)
	}
	if got := modernCallAs(t, b.url, "bob", "tools/call", "send_email", email); strings.Contains(got, "no-exfil") || strings.Contains(got, `"isError":true`) {
		t.Errorf("another agent's sink: got %s, want it allowed", got)
	}
	srv.Stop()
	if got := modernCallAs(t, b.url, "bob", "tools/call", "send_email", email); !strings.Contains(got, "policy_error") {
		t.Errorf("sink with Redis gone: got %s, want a deny with policy_error", got)
	}
}

// TestRouteMemoryRedisUnreachable checks that a gateway whose Redis does
// not answer refuses to start with an error naming it (and does not crash
// while undoing what it had built).
func TestRouteMemoryRedisUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop() // a port nobody listens on now
	cfg, err := parseConfig("test", []byte(`route_memory: {redis_url: "`+srv.URL()+`", timeout: 200ms}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	gv, err := buildGovernance(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err == nil || gv != nil || !strings.Contains(err.Error(), "route memory: redis") {
		t.Errorf("buildGovernance with Redis down: got %v, %v; want an error naming the route memory's Redis", gv, err)
	}
}

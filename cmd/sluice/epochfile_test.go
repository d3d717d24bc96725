package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRouteMemoryEpochFreshDataDir: a gateway with route memory in Redis
// notes the epoch it saw in data_dir, so that its next start notices a
// Redis that lost its data while it was stopped. On a first start the
// data_dir did not exist yet when the note was written, and the error was
// ignored: nothing was noted, Redis restarted empty overnight, and on the
// next start the agent that had read a sensitive source was clean, its
// sink allowed. The directory is made first; a note that cannot be
// written stops the start (redisstore's TestEpochFileUnwritable).
func TestRouteMemoryEpochFreshDataDir(t *testing.T) {
	srv := redistest.Start(t)
	dir := filepath.Join(t.TempDir(), "state", "sluice") // not made yet
	cfg := `data_dir: ` + dir + `
policy:
  default: allow
  result_mode: tool_result
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no sink after a sensitive read}
route_memory: {redis_url: "` + srv.URL() + `", key_prefix: "test:", timeout: 200ms}
`
	email := `{"name":"send_email","arguments":{"to":"x@example.com","subject":"s","body":"b"}}`
	a := startServe(t, cfg)
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", `{"name":"echo","arguments":{"message":"salaries"}}`); !strings.Contains(got, "salaries") {
		t.Fatalf("source: %s", got)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil { // empty: no persistence
		t.Fatal(err)
	}
	b := startServe(t, cfg)
	if got := modernCallAs(t, b.url, "alice", "tools/call", "send_email", email); !strings.Contains(got, "route_memory_evicted") {
		t.Errorf("alice's sink after Redis lost its data while no gateway ran: %s, want route_memory_evicted (she read a sensitive source)", got)
	}
}

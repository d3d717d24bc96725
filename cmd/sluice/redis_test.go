package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRouteMemoryAcrossReplicas runs two gateways sharing route memory in
// a real Redis: an agent reads a sensitive source through one, and the
// sink it then calls through the other is denied, as on a single gateway.
// So is another name's, unauthenticated callers being one agent to route
// memory; and a gateway whose Redis is gone denies rather than forgets.
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
	if got := modernCallAs(t, b.url, "bob", "tools/call", "send_email", email); !strings.Contains(got, `"matched_route_rule_id":"no-exfil"`) {
		t.Errorf("the sink under another name through the other replica: got %s, want a deny by no-exfil", got)
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

// TestRouteMemoryWriteFailsClosed pauses the route memory's Redis
// (SIGSTOP: connections stay open, nothing answers) while an agent reads a
// sensitive source: the read is denied with policy_error and never reaches
// the upstream, so the sink that follows once Redis is back cannot carry
// what it would have read. Counted at the upstream, not in the gateway's
// own account.
func TestRouteMemoryWriteFailsClosed(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy:
  default: allow
  result_mode: tool_result
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no sink after a sensitive read}
route_memory: {redis_url: "` + srv.URL() + `", key_prefix: "test:", timeout: 200ms}
`
	var mu sync.Mutex
	executed := map[string]int{} // tools/call requests that reached the upstream, by tool
	g := startServeWith(t, cfg, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				mu.Lock()
				executed[m.Params.Name]++
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	count := func(tool string) int {
		mu.Lock()
		defer mu.Unlock()
		return executed[tool]
	}
	echo := `{"name":"echo","arguments":{"message":"salaries"}}`
	email := `{"name":"send_email","arguments":{"to":"x@example.com","subject":"s","body":"b"}}`

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "policy_error") {
		t.Errorf("source with Redis paused: got %s, want a deny with policy_error", got)
	}
	// The agent is told the cause once: which store, which server.
	if strings.Contains(got, "route memory: route memory") || !strings.Contains(got, "(route memory: redis at "+srv.Socket+": context deadline exceeded)") {
		t.Errorf("source with Redis paused: got %s, want \"(route memory: redis at %s: context deadline exceeded)\", the prefix once", got, srv.Socket)
	}
	if n := count("echo"); n != 0 {
		t.Fatalf("source with Redis paused: the upstream ran echo %d times, want 0 (it was forwarded although it could not be remembered)", n)
	}
	// Redis is back. Whatever became of the write the paused server
	// received, the source never ran, so the sink has nothing to carry.
	modernCallAs(t, g.url, "alice", "tools/call", "send_email", email)

	// And memory works again: a source now is remembered and stops the sink.
	if got := modernCallAs(t, g.url, "alice", "tools/call", "echo", echo); strings.Contains(got, `"isError":true`) || count("echo") != 1 {
		t.Fatalf("source with Redis back: got %s (upstream ran it %d times), want it allowed and run once", got, count("echo"))
	}
	sinks := count("send_email")
	if got := modernCallAs(t, g.url, "alice", "tools/call", "send_email", email); !strings.Contains(got, `"matched_route_rule_id":"no-exfil"`) {
		t.Errorf("sink after the source: got %s, want a deny by no-exfil", got)
	}
	if n := count("send_email"); n != sinks {
		t.Errorf("sink after the source reached the upstream (%d runs, want %d)", n, sinks)
	}
}

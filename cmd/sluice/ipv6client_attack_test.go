package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAttackIPv6Slash64OneClient: a client holding an IPv6 /64 (2^64
// addresses; here behind a trusted proxy that names each in
// X-Forwarded-For) calls from a fresh address each time. A rule by
// client and max_sessions_per_client count the /64 as one client: the
// fourth call under 3/h is refused, as is the third session past 2,
// while a client of another /64 (and an IPv4 one) gets its own.
func TestAttackIPv6Slash64OneClient(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
trusted_proxies: [127.0.0.1]
max_sessions_per_client: 2
rate_limits:
  rules: [{id: per-address, by: [client], rate: 3/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	from := func(addr string) *http.Client { return forwardingFor("127.0.0.1", func(int) string { return addr }) }
	served := 0
	for i := range 10 {
		got := modernCallFrom(t, from(fmt.Sprintf("2001:db8:1:2::%x", i+1)), g.url, "mallory", "tools/call", "echo", echo)
		switch {
		case strings.Contains(got, "Echo: hi"):
			served++
		case !strings.Contains(got, "rate_limited"):
			t.Fatalf("call %d: got %s, want it served or rate_limited", i, got)
		}
	}
	if served != 3 {
		t.Errorf("calls from 10 addresses of one /64 under 3/h by client: %d served, want 3", served)
	}
	for _, other := range []string{"2001:db8:1:3::1", "192.0.2.7"} {
		if got := modernCallFrom(t, from(other), g.url, "alice", "tools/call", "echo", echo); !strings.Contains(got, "Echo: hi") {
			t.Errorf("a call from %s, another client: %s, want it served", other, got)
		}
	}

	sessions := 0
	for i := range 4 {
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mallory","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := from(fmt.Sprintf("2001:db8:1:2:ffff::%x", i+1)).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "" {
			sessions++
		}
	}
	if sessions != 2 {
		t.Errorf("sessions opened from 4 addresses of one /64 under max_sessions_per_client 2: %d, want 2", sessions)
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestAttackRateLimitLoopbackAddresses: a rule by: [client] is the limit
// the README offers against a client that renames itself at every call,
// keyed by an address "it cannot rename". An agent on the gateway's host
// can: Linux takes a connection from any of 127.0.0.0/8, so each call
// from a fresh loopback address had a full bucket of its own (the
// sign-in throttle already counts every loopback address as one client).
func TestAttackRateLimitLoopbackAddresses(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-address, by: [client], rate: 3/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	served := 0
	for i := range 10 {
		from := clientFrom(fmt.Sprintf("127.0.%d.%d", i/200, 2+i%200))
		got := modernCallFrom(t, from, g.url, fmt.Sprintf("mallory-%d", i), "tools/call", "echo", echo)
		switch {
		case strings.Contains(got, "Echo: hi"):
			served++
		case !strings.Contains(got, "rate_limited"):
			t.Fatalf("call %d: got %s, want it served or rate_limited", i, got)
		}
	}
	if served != 3 {
		t.Errorf("calls from a fresh loopback address and name each, under 3/h by client: got %d served, want 3", served)
	}
}

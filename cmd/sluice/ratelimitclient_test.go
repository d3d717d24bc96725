package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// clientFrom is an HTTP client whose connections come from ip, so that
// one machine can be two clients (127.0.0.1, 127.0.0.2).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestRateLimitByClientAddress: without auth a 2026-07-28 client names
// itself afresh at each call, and each name is a principal with a full
// bucket, so by: [principal] never held it (the README said so, and
// offered only a global limit, which the flood spends for everyone). A
// rule by: [client] keys the caller's address, which it cannot change
// per call: the renaming client is limited, another address is not.
func TestRateLimitByClientAddress(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-address, by: [client], rate: 3/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	mallory := clientFrom("127.0.0.1")
	served := 0
	for i := range 10 {
		got := modernCallFrom(t, mallory, g.url, fmt.Sprintf("mallory-%d", i), "tools/call", "echo", echo)
		switch {
		case strings.Contains(got, "Echo: hi"):
			served++
		case !strings.Contains(got, "rate_limited"):
			t.Fatalf("call %d: got %s, want it served or rate_limited", i, got)
		}
	}
	if served != 3 {
		t.Errorf("calls of a client renaming itself at each call, under 3/h by client: got %d served, want 3", served)
	}
	if got := modernCallFrom(t, clientFrom("127.0.0.2"), g.url, "alice", "tools/call", "echo", echo); !strings.Contains(got, "Echo: hi") {
		t.Errorf("a call from another address: got %s, want it served", got)
	}
}

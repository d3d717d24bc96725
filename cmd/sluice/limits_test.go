package main

import (
	"strings"
	"testing"
)

// TestLimitsConfig checks that the resource limits reach the gateway's
// options and that impossible values are refused at load time, naming the
// key.
func TestLimitsConfig(t *testing.T) {
	cfg, err := parseConfig("test", []byte(`max_sessions: 500
max_sessions_per_agent: 20
max_sessions_per_client: 30
max_inflight_body_bytes: 67108864
upstreams:
  - {name: s, command: demo-server, max_children: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.options()
	if o.MaxSessions != 500 || o.MaxSessionsPerAgent != 20 || o.MaxSessionsPerClient != 30 || o.MaxInflightBodyBytes != 64<<20 || o.Upstreams[0].MaxChildren != 4 {
		t.Errorf("options: got %+v, want the configured limits", o)
	}
	for _, tc := range []struct{ yaml, key string }{
		{"max_sessions: -1\n", "max_sessions"},
		{"max_sessions_per_agent: -1\n", "max_sessions_per_agent"},
		{"max_sessions_per_client: -5\n", "max_sessions_per_client"},
		{"max_inflight_body_bytes: -1\n", "max_inflight_body_bytes"},
		{"max_body_bytes: 1048576\nmax_inflight_body_bytes: 1000\n", "max_inflight_body_bytes"},
		{"upstreams: [{name: s, command: x, max_children: -1}]\n", "max_children"},
		{"upstreams: [{name: h, url: 'http://127.0.0.1:1/mcp', max_children: 4}]\n", "max_children"},
	} {
		_, err := parseConfig("test", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: got error %v, want one naming %s", tc.yaml, err, tc.key)
		}
	}
}

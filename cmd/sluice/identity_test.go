package main

import (
	"strings"
	"testing"
)

func TestAgentHeaderConfig(t *testing.T) {
	cfg, err := parseConfig("test", []byte("agent_header: X-Agent-Id\nagent_header_required: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.options(); o.AgentHeader != "X-Agent-Id" || !o.AgentHeaderRequired {
		t.Errorf("options: got AgentHeader %q, AgentHeaderRequired %v; want X-Agent-Id, true", o.AgentHeader, o.AgentHeaderRequired)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agent_header_required: true\n", "agent_header_required"},
		{"agent_header: X Agent\n", "agent_header"},
	} {
		if _, err := parseConfig("test", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
}

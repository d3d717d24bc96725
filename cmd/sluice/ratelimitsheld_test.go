package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestRateLimitHeldCallCountedOnce (found by an attacker review): a call
// held for approval and then released is one call, counted once. The hold
// took a token and the approved retry took another, so under 1/h an
// approved call could never go through, and under N/h each approved call
// cost two.
func TestRateLimitHeldCallCountedOnce(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result, require_approval: [add]}
admin_token: t0k
rate_limits:
  rules: [{id: adds, by: [principal], tool: add, rate: 1/h}]
`)
	callAdd := func() string {
		return modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":2,"b":3}}`)
	}
	held := callAdd()
	m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
	if m == nil {
		t.Fatalf("first call: got %s, want approval_required with an approval_id", held)
	}
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"approve", m[1], "--by", "ops", "--admin", "http://" + g.admin, "--token", "t0k"}, &out); err != nil {
		t.Fatalf("approvals approve: %v", err)
	}
	if got := callAdd(); !strings.Contains(got, `"text":"5"`) {
		t.Fatalf("approved call under 1/h: got %s, want the sum 5 (the held call is counted once)", got)
	}
	if got := callAdd(); !strings.Contains(got, `"code":"rate_limited"`) {
		t.Errorf("next call under 1/h: got %s, want rate_limited", got)
	}
}

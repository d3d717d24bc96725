package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestApprovalFlow holds a call, approves it with `sluice approvals`, and
// checks the same call then goes through once.
func TestApprovalFlow(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result, require_approval: [add]}\nadmin_token: t0k\n")
	ctx, adminAddr := context.Background(), g.admin
	callAdd := func() string {
		return modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":2,"b":3}}`)
	}
	held := callAdd()
	m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
	if m == nil || !strings.Contains(held, `"status":"approval_required"`) {
		t.Fatalf("first call: got %s, want approval_required with an approval_id", held)
	}
	id := m[1]
	var out bytes.Buffer
	admin := []string{"--admin", "http://" + adminAddr, "--token", "t0k"}
	if err := runApprovals(ctx, append([]string{"list"}, admin...), &out); err != nil || !strings.Contains(out.String(), id) {
		t.Fatalf("approvals list: %v\n%s", err, &out)
	}
	if err := runApprovals(ctx, []string{"approve", id, "--admin", "http://" + adminAddr}, &out); err == nil {
		t.Fatal("approve without the token succeeded")
	}
	if err := runApprovals(ctx, append([]string{"approve", id, "--by", "ops"}, admin...), &out); err != nil {
		t.Fatalf("approvals approve: %v", err)
	}
	if got := callAdd(); !strings.Contains(got, `"text":"5"`) {
		t.Fatalf("approved call: got %s, want the sum 5", got)
	}
	if got := callAdd(); !strings.Contains(got, "approval_required") {
		t.Fatalf("third call: got %s, want a new hold (an approval is used once)", got)
	}
	// The first request is finished: the gateway dropped what it held, and
	// the list says so with "-", not "null".
	out.Reset()
	if err := runApprovals(ctx, append([]string{"list"}, admin...), &out); err != nil {
		t.Fatalf("approvals list: %v", err)
	}
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, id+" ") && (strings.Contains(line, "null") || len(strings.Fields(line)) != 7 || strings.Fields(line)[4] != "-") {
			t.Errorf("finished request's row: %q, want its arguments and other members shown as -", line)
		}
	}
}

// TestApprovalAcrossReplicas: two gateways with their own data
// directories share held calls through a real Redis: a call held on A is
// approved through B's admin API and goes through on A once; a Redis
// outage fails the held call closed rather than letting it through.
func TestApprovalAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := "policy: {default: allow, result_mode: tool_result, require_approval: [add]}\nadmin_token: t0k\n" +
		"approvals: {redis_url: \"" + srv.URL() + "\", key_prefix: \"test:\"}\n"
	a, b := startServe(t, cfg), startServe(t, cfg)
	ctx := context.Background()
	callAdd := func(g *running) string {
		return modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":2,"b":3}}`)
	}
	held := callAdd(a)
	m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
	if m == nil {
		t.Fatalf("call on A: got %s, want approval_required with an approval_id", held)
	}
	var out bytes.Buffer
	adminB := []string{"--admin", "http://" + b.admin, "--token", "t0k"}
	if err := runApprovals(ctx, append([]string{"list"}, adminB...), &out); err != nil || !strings.Contains(out.String(), m[1]) {
		t.Fatalf("approvals list on B: %v\n%s", err, &out)
	}
	if err := runApprovals(ctx, append([]string{"approve", m[1], "--by", "ops"}, adminB...), &out); err != nil {
		t.Fatalf("approve on B: %v", err)
	}
	if got := callAdd(a); !strings.Contains(got, `"text":"5"`) {
		t.Fatalf("approved call on A: got %s, want the sum 5", got)
	}
	if got := callAdd(b); !strings.Contains(got, "approval_required") {
		t.Fatalf("the same call on B: got %s, want a new hold (the approval is used)", got)
	}
	srv.Stop()
	if got := callAdd(a); strings.Contains(got, `"text":"5"`) {
		t.Fatalf("call with Redis gone: got %s, want it refused", got)
	} else if !strings.Contains(got, `"isError":true`) && !strings.Contains(got, `"error"`) {
		t.Fatalf("call with Redis gone: got %s, want a denial", got)
	}
}

package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestSelfApprovalByActor: an agent that holds a token delegated to it by
// an operator (RFC 8693 token exchange: the operator is the subject, the
// agent the actor, named in act) answered its own held call on the admin
// API and the console: the token's act, which names who acts, was not
// among the names looked for, and the agent approved itself under the
// operator's admin role. A token whose actor, or any actor before it in
// act's chain, is the held call's agent cannot answer it.
func TestSelfApprovalByActor(t *testing.T) {
	j := newJWTApprovals(t, "")
	as, g := j.as, j.g
	agentTok := as.sign(map[string]any{"sub": "robot-sa-uuid", "azp": "robot", "aud": j.base + "/mcp/demo"})
	delegated := func(act map[string]any) string {
		return as.sign(map[string]any{"sub": "ops-lead-uuid", "azp": "token-exchange", "aud": "sluice-admin-api",
			"roles": []string{"sluice-admin"}, "act": act})
	}
	hold := func() string { return j.hold(t, agentTok) }
	decide := func(id, bearer string) int { return j.decide(t, id, bearer) }

	// Another actor's delegated token answers the call.
	if code := decide(hold(), delegated(map[string]any{"sub": "helper-sa-uuid"})); code != http.StatusOK {
		t.Fatalf("admin JWT delegated to another actor: got %d, want 200", code)
	}
	for name, act := range map[string]map[string]any{
		"actor":         {"sub": "robot-sa-uuid"},
		"earlier actor": {"sub": "helper-sa-uuid", "act": map[string]any{"sub": "robot-sa-uuid"}},
	} {
		if code := decide(hold(), delegated(act)); code != http.StatusForbidden {
			t.Errorf("admin API, admin JWT whose %s is the held call's agent: got %d, want 403", name, code)
		}
	}
	if code, b := consoleApprove(t, g.admin, delegated(map[string]any{"sub": "robot-sa-uuid"}), hold()); code != http.StatusForbidden {
		t.Errorf("console, admin JWT whose actor is the held call's agent: %d %.200s, want 403", code, b)
	}
}

// jwtApprovals is the demo upstream behind JWT authentication (agents'
// tokens and admin JWTs from one test authorization server), with add
// held for approval.
type jwtApprovals struct {
	as   *testAS
	g    *running
	base string // the agents' listener
	n    int
}

// newJWTApprovals starts it, agents named by agentClaim ("": sub).
func newJWTApprovals(t *testing.T, agentClaim string) *jwtApprovals {
	t.Helper()
	as := newTestAS(t, nil)
	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + agents.Addr().String()
	claim := ""
	if agentClaim != "" {
		claim = ", agent_claim: " + agentClaim
	}
	g := startServeOn(t, agents, fmt.Sprintf(`listen: %s
policy: {default: allow, result_mode: tool_result, require_approval: [add]}
auth:
  mode: jwt
  jwt: {issuer: %s, audience: [%s/mcp/demo], jwks_url: %s/jwks%s}
admin_token: t0k
admin_jwt: {issuer: %s, audience: [sluice-admin-api], jwks_url: %s/jwks, required_claims: {roles: sluice-admin}}
`, agents.Addr(), as.srv.URL, base, as.srv.URL, claim, as.srv.URL, as.srv.URL), nil)
	return &jwtApprovals{as: as, g: g, base: base}
}

// hold has the agent of token call add, held, and returns its approval's id.
func (j *jwtApprovals) hold(t *testing.T, token string) string {
	t.Helper()
	j.n++
	got := modernCallWithKey(t, j.base+"/mcp/demo", token, "client", "add", fmt.Sprintf(`{"a":%d,"b":1}`, j.n))
	id := approvalID.FindString(got)
	if id == "" {
		t.Fatalf("call not held: %s", got)
	}
	return id
}

// decide approves id on the admin API with bearer, and returns the status.
func (j *jwtApprovals) decide(t *testing.T, id, bearer string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+j.g.admin+"/admin/approvals/"+id, strings.NewReader(`{"action":"approve"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

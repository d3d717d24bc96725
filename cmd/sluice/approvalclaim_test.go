package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// TestSelfApprovalByAgentClaim: with auth.jwt.agent_claim naming agents
// by a claim of their own (preferred_username here; email or a custom
// agent_id alike), an admin JWT for the same IdP account — its sub a
// UUID, its preferred_username the held call's agent — answered that
// agent's approval on the admin API and the console: the agent's names
// were looked for in sub, azp, client_id, appid and cid only. The
// admin's token names the agent by the very claim agents are named by.
func TestSelfApprovalByAgentClaim(t *testing.T) {
	as := newTestAS(t, nil)
	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + agents.Addr().String()
	g := startServeOn(t, agents, fmt.Sprintf(`listen: %s
policy: {default: allow, result_mode: tool_result, require_approval: [add]}
auth:
  mode: jwt
  jwt: {issuer: %s, audience: [%s/mcp/demo], jwks_url: %s/jwks, agent_claim: preferred_username}
admin_token: t0k
admin_jwt: {issuer: %s, audience: [sluice-admin-api], jwks_url: %s/jwks, required_claims: {roles: sluice-admin}}
`, agents.Addr(), as.srv.URL, base, as.srv.URL, as.srv.URL, as.srv.URL), nil)
	agentTok := as.sign(map[string]any{"sub": "8f0c-robot-uuid", "preferred_username": "robot", "aud": base + "/mcp/demo"})
	adminOf := func(username string) string {
		return as.sign(map[string]any{"sub": "8f0c-" + username + "-uuid", "preferred_username": username, "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})
	}
	n := 0
	hold := func() string {
		t.Helper()
		n++
		got := modernCallWithKey(t, base+"/mcp/demo", agentTok, "client", "add", fmt.Sprintf(`{"a":%d,"b":1}`, n))
		id := approvalID.FindString(got)
		if id == "" {
			t.Fatalf("call not held: %s", got)
		}
		return id
	}
	status := func(id string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+g.admin+"/admin/approvals/"+id, nil)
		req.Header.Set("Authorization", "Bearer t0k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	decide := func(id, bearer string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.admin+"/admin/approvals/"+id, strings.NewReader(`{"action":"approve"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if id := hold(); decide(id, adminOf("ops-lead")) != http.StatusOK {
		t.Fatalf("another operator's admin JWT: refused, want the approval (%s)", status(id))
	}
	id := hold()
	if code := decide(id, adminOf("robot")); code != http.StatusForbidden {
		t.Errorf("admin API, admin JWT whose preferred_username is the held call's agent: got %d, want 403", code)
	}
	if st := status(id); !strings.Contains(st, `"status":"pending"`) {
		t.Errorf("admin API: after the refusal the request is %s, want pending", st)
	}

	id = hold()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm("http://"+g.admin+"/console/login", url.Values{"name": {"someone"}, "token": {adminOf("robot")}, "next": {"/console/approvals"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatalf("console sign-in: %d %.300s", resp.StatusCode, page)
	}
	sbase, _ := strings.CutSuffix(resp.Request.URL.String(), "/approvals")
	resp, err = browser.PostForm(sbase+"/approvals/"+id, url.Values{"csrf": {string(m[1])}, "action": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("console, admin JWT whose preferred_username is the held call's agent: %d %.200s, want 403", resp.StatusCode, b)
	}
	if st := status(id); !strings.Contains(st, `"status":"pending"`) {
		t.Errorf("console: after the refusal the request is %s, want pending", st)
	}
}

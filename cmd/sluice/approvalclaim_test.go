package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/recommend"
)

// TestSelfApprovalByAgentClaim: with auth.jwt.agent_claim naming agents
// by a claim of their own (preferred_username here; email or a custom
// agent_id alike), an admin JWT for the same IdP account — its sub a
// UUID, its preferred_username the held call's agent — answered that
// agent's approval on the admin API and the console: the agent's names
// were looked for in sub, azp, client_id, appid and cid only. The
// admin's token names the agent by the very claim agents are named by.
func TestSelfApprovalByAgentClaim(t *testing.T) {
	j := newJWTApprovals(t, "preferred_username")
	as, g, base := j.as, j.g, j.base
	agentTok := as.sign(map[string]any{"sub": "8f0c-robot-uuid", "preferred_username": "robot", "aud": base + "/mcp/demo"})
	adminOf := func(username string) string {
		return as.sign(map[string]any{"sub": "8f0c-" + username + "-uuid", "preferred_username": username, "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})
	}
	hold := func() string { return j.hold(t, agentTok) }
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
	decide := func(id, bearer string) int { return j.decide(t, id, bearer) }

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
	code, b := consoleApprove(t, g.admin, adminOf("robot"), id)
	if code != http.StatusForbidden {
		t.Errorf("console, admin JWT whose preferred_username is the held call's agent: %d %.200s, want 403", code, b)
	}
	if st := status(id); !strings.Contains(st, `"status":"pending"`) {
		t.Errorf("console: after the refusal the request is %s, want pending", st)
	}
}

// TestRecommendSelfApproval: a recommendation about an agent (ADD_TOOL
// widens its manifest) was approved through the admin API by an admin JWT
// naming that agent, or by the admin token with "by" naming it, and on
// the console by an operator of that name: the agent widened its own
// policy. Like a held call, a recommendation about an agent is answered
// by someone else (403; the policy file and the recommendation stay).
func TestRecommendSelfApproval(t *testing.T) {
	as := newTestAS(t, nil)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	const src = "default: allow\nmanifests:\n  agent-a: {allowed_classes: [source:local]}\n"
	if err := os.WriteFile(pol, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig("c.yaml", []byte("data_dir: "+filepath.Join(dir, "data")+"\npolicy_file: "+pol+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	events, err := audit.Open(filepath.Join(dir, "data", audit.FileName), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	rc, err := newRecommender(cfg, events)
	if err != nil {
		t.Fatal(err)
	}
	rc.agentClaims = []string{"preferred_username"}
	var recs []recommend.Recommendation
	for i := range 4 {
		recs = append(recs, recommend.Recommendation{ID: fmt.Sprintf("rec_%d", i), Type: recommend.AddTool, Agent: "agent-a",
			Change: recommend.Change{Path: []string{"manifests", "agent-a", "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}}})
	}
	// An agent's name in any normal form is that agent (approval.SameAgent):
	// café precomposed is cafe+U+0301 decomposed.
	recs = append(recs, recommend.Recommendation{ID: "rec_4", Type: recommend.AddTool, Agent: "caf\u00e9",
		Change: recommend.Change{Path: []string{"manifests", "caf\u00e9", "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}}})
	if _, err := rc.store.Merge(recs, time.Now()); err != nil {
		t.Fatal(err)
	}
	guard := &adminGuard{token: "t0k", jwt: auth.NewJWTVerifier(auth.JWTConfig{Issuer: as.srv.URL, Audience: []string{"sluice-admin-api"},
		JWKSURL: as.srv.URL + "/jwks", RequiredClaims: map[string]string{"roles": "sluice-admin"}}, nil, nil)}
	srv := httptest.NewServer(guard.wrap(rc.handler()))
	defer srv.Close()
	adminAs := func(claims map[string]any) string {
		claims["aud"], claims["roles"] = "sluice-admin-api", []string{"sluice-admin"}
		return as.sign(claims)
	}
	for _, tt := range []struct{ id, action, bearer, body string }{
		{"rec_0", "approve", adminAs(map[string]any{"sub": "agent-a"}), `{}`},
		{"rec_1", "approve", adminAs(map[string]any{"sub": "sa-1", "azp": "agent-a"}), `{}`},
		{"rec_2", "approve", adminAs(map[string]any{"sub": "uuid-1", "preferred_username": "agent-a"}), `{}`},
		{"rec_3", "approve", "t0k", `{"by":"agent-a"}`},
		{"rec_0", "decline", adminAs(map[string]any{"sub": "agent-a"}), `{"reason":"NOT_NEEDED"}`},
		{"rec_4", "approve", adminAs(map[string]any{"sub": "sa-2", "azp": "cafe\u0301"}), `{}`},
		{"rec_4", "decline", adminAs(map[string]any{"sub": "sa-2", "azp": "cafe\u0301"}), `{"reason":"NOT_NEEDED"}`},
		{"rec_4", "decline", "t0k", `{"by":"cafe\u0301","reason":"NOT_NEEDED"}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/admin/recommendations/"+tt.id+"/"+tt.action, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tt.bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s by the agent it is about: %d %s, want 403", tt.action, tt.id, resp.StatusCode, b)
		}
		if rec, _ := rc.store.Get(tt.id); rec.Status != recommend.StatusPending {
			t.Errorf("%s %s: the recommendation is %s, want pending", tt.action, tt.id, rec.Status)
		}
	}
	if b, _ := os.ReadFile(pol); string(b) != src {
		t.Errorf("the policy file changed:\n%s", b)
	}
}

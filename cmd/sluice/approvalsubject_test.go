package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/recommend"
)

// subjectServe starts serve with JWT-authenticated agents, calls to add
// held for approval, the admin token t0k and admin JWTs from as (audience
// sluice-admin-api, role sluice-admin).
func subjectServe(t *testing.T, as *testAS) (r *running, base string) {
	t.Helper()
	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base = "http://" + agents.Addr().String()
	r = startServeOn(t, agents, fmt.Sprintf(`listen: %s
policy: {default: allow, result_mode: tool_result, require_approval: [add]}
auth:
  mode: jwt
  jwt: {issuer: %s, audience: [%s/mcp/demo], jwks_url: %s/jwks}
admin_token: t0k
admin_jwt: {issuer: %s, audience: [sluice-admin-api], jwks_url: %s/jwks, required_claims: {roles: sluice-admin}}
`, agents.Addr(), as.srv.URL, base, as.srv.URL, as.srv.URL, as.srv.URL), nil)
	return r, base
}

// TestApprovalDeciderProven: through the admin API, the decider recorded
// is an admin JWT's subject whatever "by" says (the CLI's --by too); only
// with the shared admin token is "by" taken as said. The agent whose call
// is held cannot answer it: not with an admin JWT of its own subject, not
// by naming itself beside the admin token, not signed in to the console
// with such a JWT. Each refusal is a 403 and leaves the call pending.
func TestApprovalDeciderProven(t *testing.T) {
	as := newTestAS(t, nil)
	g, base := subjectServe(t, as)
	agentTok := as.sign(map[string]any{"sub": "robot", "aud": base + "/mcp/demo"})
	admin := func(sub string) string {
		return as.sign(map[string]any{"sub": sub, "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})
	}
	adminAzp := as.sign(map[string]any{"sub": "service-account-x", "azp": "robot", "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})
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
	decide := func(id, bearer, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.admin+"/admin/approvals/"+id, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
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
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return fmt.Sprint(m["status"])
	}

	for _, tt := range []struct {
		name, bearer, body string
		wantCode           int
		wantBy             string
	}{
		{"admin JWT claiming another decider", admin("ops-lead"), `{"action":"approve","by":"alice"}`, 200, "ops-lead"},
		{"admin JWT naming no decider", admin("ops-lead"), `{"action":"decline"}`, 200, "ops-lead"},
		{"admin token", "t0k", `{"action":"approve","by":"carol"}`, 200, "carol"},
		{"admin JWT of the held call's agent", admin("robot"), `{"action":"approve","by":"alice"}`, 403, ""},
		{"admin JWT of the held call's agent declining", admin("robot"), `{"action":"decline"}`, 403, ""},
		{"admin token naming the held call's agent", "t0k", `{"action":"approve","by":"robot"}`, 403, ""},
		// One IdP client given both roles: the agent is named by the
		// agent token's sub, the admin token names that client in azp.
		{"admin JWT issued to the held call's agent (azp)", adminAzp, `{"action":"approve"}`, 403, ""},
	} {
		id := hold()
		code, m := decide(id, tt.bearer, tt.body)
		if code != tt.wantCode {
			t.Errorf("%s: got %d %v, want %d", tt.name, code, m, tt.wantCode)
			continue
		}
		if code != 200 {
			if st := status(id); st != "pending" {
				t.Errorf("%s: refused, but the request is %s, want pending", tt.name, st)
			}
			continue
		}
		if m["decided_by"] != tt.wantBy {
			t.Errorf("%s: decided_by %v, want %q", tt.name, m["decided_by"], tt.wantBy)
		}
	}

	// sluice approvals with an admin JWT: --by does not name the decider.
	id := hold()
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"approve", id, "--admin", g.admin, "--token", admin("ops-lead"), "--by", "mallory"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), "by ops-lead") {
		t.Errorf("sluice approvals approve with an admin JWT: %q, want it decided by ops-lead", out.String())
	}
	id = hold()
	out.Reset()
	err := runApprovals(context.Background(), []string{"approve", id, "--admin", g.admin, "--token", admin("robot")}, &out)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("sluice approvals approve by the held call's agent: %v %q, want a 403", err, out.String())
	}

	// The console, signed in with an admin JWT whose subject is the
	// agent, or that was issued to it (azp).
	for _, tok := range []string{admin("robot"), adminAzp} {
		id := hold()
		code, b := consoleApprove(t, g.admin, tok, id)
		if code != http.StatusForbidden {
			t.Errorf("console approval by the held call's agent: %d %s, want 403", code, b)
		}
		if st := status(id); st != "pending" {
			t.Errorf("console approval by the held call's agent: the request is %s, want pending", st)
		}
	}
}

// TestConsoleSessionEndsWithAdminJWT: a console session opened with an
// admin JWT lasts no longer than the JWT. This one's exp has just passed,
// within the verifier's clock skew (60 s), so the sign-in is accepted,
// but the session it opens is over at once instead of lasting 12 h.
func TestConsoleSessionEndsWithAdminJWT(t *testing.T) {
	as := newTestAS(t, nil)
	g, _ := subjectServe(t, as)
	for _, tt := range []struct {
		name     string
		exp      time.Time
		wantLive bool
	}{
		{"JWT valid for an hour", time.Now().Add(time.Hour), true},
		{"JWT expired a moment ago", time.Now().Add(-5 * time.Second), false},
	} {
		tok := as.sign(map[string]any{"sub": "ops-lead", "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}, "exp": tt.exp.Unix()})
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, CheckRedirect: noRedirect}
		resp, err := browser.PostForm("http://"+g.admin+"/console/login", url.Values{"name": {"x"}, "token": {tok}, "next": {"/console/approvals"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/k/") {
			t.Fatalf("%s: sign-in %d %s, want it accepted", tt.name, resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, err = browser.Get("http://" + g.admin + resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if live := resp.StatusCode == http.StatusOK; live != tt.wantLive {
			t.Errorf("%s: session page %d %s, want live %v", tt.name, resp.StatusCode, resp.Header.Get("Location"), tt.wantLive)
		}
	}
}

// TestRecommendDeciderProven: a recommendation approved (a policy change)
// or declined through the admin API with an admin JWT is recorded as the
// JWT's subject, whatever "by" says; with the admin token, as said.
func TestRecommendDeciderProven(t *testing.T) {
	as := newTestAS(t, nil)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("default: allow\nmanifests:\n  agent-a: {allowed_classes: [source:local]}\n"), 0o644); err != nil {
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
	var recs []recommend.Recommendation
	for i, class := range []string{"sink:network", "sink:email", "sink:files"} {
		recs = append(recs, recommend.Recommendation{ID: fmt.Sprintf("rec_%d", i), Type: recommend.AddTool, Agent: "agent-a",
			Change: recommend.Change{Path: []string{"manifests", "agent-a", "allowed_classes"}, Operation: "add", Value: []string{class}}})
	}
	if _, err := rc.store.Merge(recs, time.Now()); err != nil {
		t.Fatal(err)
	}
	guard := &adminGuard{token: "t0k", jwt: auth.NewJWTVerifier(auth.JWTConfig{Issuer: as.srv.URL, Audience: []string{"sluice-admin-api"},
		JWKSURL: as.srv.URL + "/jwks", RequiredClaims: map[string]string{"roles": "sluice-admin"}}, nil, nil)}
	srv := httptest.NewServer(guard.wrap(rc.handler()))
	defer srv.Close()
	adminJWT := as.sign(map[string]any{"sub": "ops-lead", "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})
	for _, tt := range []struct{ id, action, bearer, body, wantBy string }{
		{"rec_0", "approve", adminJWT, `{"by":"alice"}`, "ops-lead"},
		{"rec_1", "decline", adminJWT, `{"by":"alice","reason":"NOT_NEEDED"}`, "ops-lead"},
		{"rec_2", "approve", "t0k", `{"by":"carol"}`, "carol"},
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
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", tt.action, tt.id, resp.StatusCode, b)
		}
		rec, err := rc.store.Get(tt.id)
		if err != nil || rec.Decision == nil || rec.Decision.DecidedBy != tt.wantBy {
			t.Errorf("%s %s with %q: decision %+v (%v), want it decided by %q", tt.action, tt.id, tt.body, rec.Decision, err, tt.wantBy)
		}
	}
}

// consoleApprove signs in to the console at admin with token, approves
// the held request id there, and returns the answer's status and body.
func consoleApprove(t *testing.T, admin, token, id string) (int, []byte) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm("http://"+admin+"/console/login", url.Values{"name": {"someone"}, "token": {token}, "next": {"/console/approvals"}})
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
	return resp.StatusCode, b
}

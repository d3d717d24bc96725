package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/recommend"
)

// TestRecommendApproveReloads: an agent's calls denied by its manifest
// become an ADD_TOOL recommendation; the admin API shows its diff,
// refuses a cross-origin-shaped or unauthenticated approval, and an
// approval rewrites the policy file (a signed copy kept), the gateway
// reloads it, the agent's next call goes through, and the decision is an
// audit event.
func TestRecommendApproveReloads(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte("# team policy\ndefault: allow\nresult_mode: tool_result\ntool_classes:\n  web_search: [sink:network]\n  echo: [source:local]\nmanifests:\n  agent-a: {allowed_classes: [source:local]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startServe(t, "policy_file: "+polFile+"\nadmin_token: t0k\nhide_denied_tools: false\n")
	search := `{"name":"web_search","arguments":{"query":"q"}}`
	for range 5 {
		if out := modernCallAs(t, g.url, "agent-a", "tools/call", "web_search", search); !strings.Contains(out, "manifest") {
			t.Fatalf("web_search by agent-a: %s, want the manifest's deny", out)
		}
	}
	admin := "http://" + g.admin + "/admin/recommendations"
	call := func(method, url, ctype, body, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" && time.Now().Before(deadline) { // the audit queue may lag the calls
		code, m := call("POST", admin, "application/json", "{}", "t0k")
		if code != 200 {
			t.Fatalf("run: %d %v", code, m)
		}
		ps, _ := m["pending"].([]any)
		for _, p := range ps {
			r := p.(map[string]any)
			if r["type"] == "ADD_TOOL" && r["agent"] == "agent-a" {
				id = r["recommendation_id"].(string)
			}
		}
		if id == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatal("no ADD_TOOL recommendation for agent-a")
	}
	code, m := call("GET", admin+"/"+id, "", "", "t0k")
	if diff, _ := m["diff"].(string); code != 200 || !regexp.MustCompile(`(?m)^\+ .*sink:network`).MatchString(diff) {
		t.Fatalf("preview: %d %v", code, m)
	}
	if code, _ := call("POST", admin+"/"+id+"/approve", "text/plain", `{"by":"ops"}`, "t0k"); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain approval: %d, want 415", code)
	}
	if code, _ := call("POST", admin+"/"+id+"/approve", "application/json", `{"by":"ops"}`, ""); code != http.StatusUnauthorized {
		t.Errorf("approval without the token: %d, want 401", code)
	}
	code, m = call("POST", admin+"/"+id+"/approve", "application/json", `{"by":"ops"}`, "t0k")
	if code != 200 {
		t.Fatalf("approve: %d %v", code, m)
	}
	if code, _ := call("POST", admin+"/"+id+"/approve", "application/json", `{"by":"ops"}`, "t0k"); code != http.StatusConflict {
		t.Errorf("second approval: %d, want 409", code)
	}
	src, _ := os.ReadFile(polFile)
	if !strings.Contains(string(src), "sink:network") || !strings.Contains(string(src), "# team policy") {
		t.Errorf("policy file after approval:\n%s", src)
	}
	// The kept copy verifies with the data directory's signing key.
	copies, _ := filepath.Glob(filepath.Join(g.dir, "policy-history", "*.yaml"))
	if len(copies) != 1 {
		t.Fatalf("policy history: %v", copies)
	}
	kept, _ := os.ReadFile(copies[0])
	sigText, _ := os.ReadFile(strings.TrimSuffix(copies[0], ".yaml") + ".sig")
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sigText)))
	key, err := inventory.LoadKey(filepath.Join(g.dir, inventory.KeyFileName))
	if err != nil || !bytes.Equal(kept, src) || !ed25519.Verify(key.Public().(ed25519.PublicKey), kept, sig) {
		t.Errorf("signed copy does not verify (%v)", err)
	}
	// The gateway reloads the file: agent-a's web_search is allowed now.
	var out string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out = modernCallAs(t, g.url, "agent-a", "tools/call", "web_search", search); !strings.Contains(out, "manifest") {
			break
		}
	}
	if strings.Contains(out, "manifest") {
		t.Fatalf("after approval web_search is still denied: %s", out)
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var ev bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &ev); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"type":"sluice.recommendation_decided"[^\n]*"decided_by":"ops"`).MatchString(ev.String()) ||
		!strings.Contains(ev.String(), `"resulting_policy_version"`) {
		t.Errorf("no recommendation_decided event:\n%.3000s", ev.String())
	}
	// The CLI sees the same store.
	cfgFile := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfgFile, []byte("data_dir: "+g.dir+"\npolicy_file: "+polFile+"\n"), 0o600)
	var list bytes.Buffer
	if err := runRecommend(context.Background(), []string{"list", "--json", "--config", cfgFile}, &list); err != nil || !strings.Contains(list.String(), `"status": "approved"`) {
		t.Errorf("recommend list: %v\n%s", err, list.String())
	}
	// The approved finding is not proposed again; a bad --since is refused.
	var run bytes.Buffer
	if err := runRecommend(context.Background(), []string{"run", "--since", "30d", "--json", "--config", cfgFile}, &run); err != nil || strings.Contains(run.String(), "ADD_TOOL") {
		t.Errorf("recommend run --since 30d after approval: %v\n%s", err, run.String())
	}
	if err := runRecommend(context.Background(), []string{"run", "--since", "soon", "--config", cfgFile}, &run); err == nil {
		t.Error("--since soon was accepted")
	}
	// show, without --json, prints what the recommendation rests on.
	var show bytes.Buffer
	if err := runRecommend(context.Background(), []string{"show", id, "--config", cfgFile}, &show); err != nil ||
		!regexp.MustCompile(`evidence: \d+ events in `).MatchString(show.String()) || !strings.Contains(show.String(), "example call: ") {
		t.Errorf("recommend show: %v\n%s", err, show.String())
	}
	// Its example calls' command reads this gateway's events: it said
	// `sluice events query --txn ID`, which reads the default data_dir's
	// and printed nothing for this one.
	ex := regexp.MustCompile(`\(sluice events (query .*--txn (\S+))\)`).FindStringSubmatch(show.String())
	if ex == nil || !strings.Contains(ex[1], "--config "+cfgFile) {
		t.Errorf("recommend show: the example call's command does not name --config %s:\n%s", cfgFile, show.String())
	} else {
		var got bytes.Buffer
		if err := runEvents(context.Background(), strings.Fields(ex[1]), &got); err != nil || !strings.Contains(got.String(), ex[2]) {
			t.Errorf("the printed sluice events %s: %v, %q", ex[1], err, got.String())
		}
	}
	var declined bytes.Buffer
	if err := runRecommend(context.Background(), []string{"decline", id, "--reason", "NOT_NEEDED", "--by", "ops", "--config", cfgFile}, &declined); err == nil {
		t.Errorf("declined an approved recommendation: %s", declined.String())
	}
}

// TestRecommendApproveStoreFails: when the decision cannot be stored (a
// full disk, here a directory where the store writes), the approval says
// the policy changed anyway and the audit trail records it.
func TestRecommendApproveStoreFails(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("default: allow\nmanifests:\n  agent-a: {allowed_classes: [source:local]}\n"), 0o644)
	cfg, err := parseConfig("c.yaml", []byte("data_dir: "+filepath.Join(dir, "data")+"\npolicy_file: "+pol+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	events := openDataEvents(t, dir)
	rc, err := newRecommender(cfg, events)
	if err != nil {
		t.Fatal(err)
	}
	r := recommend.Recommendation{ID: "rec_x", Type: recommend.AddTool, Agent: "agent-a",
		Change: recommend.Change{Path: []string{"manifests", "agent-a", "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}}}
	if _, err := rc.store.Merge([]recommend.Recommendation{r}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data", "recommendations.json.tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err = rc.approve(context.Background(), "rec_x", "ops")
	if err == nil || !strings.Contains(err.Error(), "could not be stored") {
		t.Fatalf("approve with an unwritable store: %v", err)
	}
	if src, _ := os.ReadFile(pol); !strings.Contains(string(src), "sink:network") {
		t.Errorf("policy not changed:\n%s", src)
	}
	got, err := events.Query(context.Background(), audit.Filter{Type: TypeRecommendationDecided})
	if err != nil || len(got) != 1 || got[0].Attrs["decided_by"] != "ops" {
		t.Errorf("audit trail: %v %v", got, err)
	}
}

// TestRecommendDecideNeedsFlags: approve and decline without --by, and
// decline without --reason, name the flag to give; they said "a decision
// names who made it" and `reason code "": want one of [...]`.
func TestRecommendDecideNeedsFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte("default: deny\n"), 0o600)
	os.WriteFile(cfgFile, []byte("data_dir: "+filepath.Join(dir, "data")+"\npolicy_file: policy.yaml\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"approve", "rec_1a2b3c4d5e6f7a8b"}, "--by NAME"},
		{[]string{"decline", "rec_1a2b3c4d5e6f7a8b", "--reason", "DEFERRED"}, "--by NAME"},
		{[]string{"decline", "rec_1a2b3c4d5e6f7a8b", "--by", "alice"}, "--reason: one of NOT_NEEDED"},
	} {
		err := runRecommend(context.Background(), append(tc.args, "--config", cfgFile), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("recommend %v: got %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// `recommend show` of an approved recommendation that added a rule
// failed: the preview applied the change again to the policy that already
// had it ("the changed policy does not compile: id … is already used").
// It shows the recommendation and its decision, and no diff to make.
func TestRecommendShowApproved(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("default: deny\nrules:\n  - {id: echo, match: {match_tool: echo}, decision: allow}\n"), 0o644)
	cfgFile := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfgFile, []byte("data_dir: "+filepath.Join(dir, "data")+"\npolicy_file: "+pol+"\n"), 0o600)
	cfg, err := loadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	events := openDataEvents(t, dir)
	rc, err := newRecommender(cfg, events)
	if err != nil {
		t.Fatal(err)
	}
	rule := map[string]any{"match": map[string]any{"match_tool": "add", "upstream": "demo"}, "when": `agent == "calc"`, "decision": "allow", "reason": "calc may call demo/add"}
	r := recommend.Recommendation{ID: "rec_1a2b3c4d5e6f7a8b", Type: recommend.AddTool, Agent: "calc", Tool: "demo/add",
		Change: recommend.Change{Path: []string{"rules"}, Operation: "add", Value: rule}}
	if _, err := rc.store.Merge([]recommend.Recommendation{r}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var show bytes.Buffer
	if err := runRecommend(context.Background(), []string{"show", r.ID, "--config", cfgFile}, &show); err != nil || !strings.Contains(show.String(), "match_tool: add") {
		t.Fatalf("show pending: %v\n%s", err, show.String())
	}
	if _, _, err := rc.approve(context.Background(), r.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	events.Close()
	show.Reset()
	if err := runRecommend(context.Background(), []string{"show", r.ID, "--config", cfgFile}, &show); err != nil ||
		!strings.Contains(show.String(), "(approved)") || !strings.Contains(show.String(), "decided: APPROVE by ops") {
		t.Errorf("show approved: %v\n%s", err, show.String())
	}
}

// openDataEvents opens the event store of a config whose data_dir is
// dir/data, closed at the test's end.
func openDataEvents(t *testing.T, dir string) *audit.Store {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	events, err := audit.Open(filepath.Join(dir, "data", audit.FileName), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { events.Close() })
	return events
}

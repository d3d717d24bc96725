package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// requireChromium skips without Debian's chromium, except under CI=true
// where .ci/run installs it.
func requireChromium(t *testing.T) string {
	t.Helper()
	bin := "/usr/bin/chromium"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium missing under CI: .ci/run installs Debian's chromium (%v)", err)
		}
		t.Skip("chromium missing: apt-get install chromium to run the browser tests")
	}
	return bin
}

// startServeAddrs runs `sluice serve` with config and returns the agents'
// and the admin listener's base URLs, read from its log.
func startServeAddrs(t *testing.T, bin, config string) (gw, admin string) {
	t.Helper()
	gw, admin, _ = startServeProc(t, bin, config)
	return gw, admin
}

// startServeProc is startServeAddrs that also returns the process.
func startServeProc(t *testing.T, bin, config string) (gw, admin string, proc *os.Process) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "sluice"), "serve", "--config", path)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	type addr struct {
		admin bool
		url   string
	}
	found := make(chan addr, 2)
	var log bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			for _, f := range strings.Fields(line) {
				if a, ok := strings.CutPrefix(f, "addr="); ok {
					found <- addr{strings.Contains(line, `msg="admin API listening"`), "http://" + a}
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sluice log:\n%s", lastLines(log.String(), 40))
		}
	})
	for gw == "" || admin == "" {
		proc = cmd.Process
		select {
		case a := <-found:
			if a.admin {
				admin = a.url
			} else {
				gw = a.url
			}
		case <-time.After(time.Minute):
			t.Fatal("sluice did not listen within a minute")
		}
	}
	return gw, admin, proc
}

// agentCall is a MCP 2026-07-28 tools/call from agent.
func agentCall(t *testing.T, url, agent, tool, args string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, tool, args, agent)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

// TestConsoleInBrowser drives the operator console in headless Chromium
// with Playwright: sign in with the keyboard, see a denied call in the
// live feed within a second, open the call, approve a held call and see
// the agent's retry go through (every argument of the held call in sight,
// however the agent laid them out), approve a drifted tool, decline a
// recommendation with a reason, read the agents page and replay a draft
// policy. SLUICE_SCREENSHOTS=DIR keeps a screenshot of each page there
// (docs/console holds the committed ones).
func TestConsoleInBrowser(t *testing.T) {
	requireNode(t)
	chromium := requireChromium(t)
	wd, _ := os.Getwd()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/sluice", "./examples/demo-server")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(`# demo policy
default: allow
result_mode: tool_result
require_approval: [add, echo]
deny: [send_email]
tool_classes:
  web_search: [sink:network]
  echo: [source:local]
manifests:
  agent-b: {allowed_classes: [source:local]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	gw, admin := startServeAddrs(t, bin, fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
admin_token: t0k
data_dir: %s
policy_file: %s
hide_denied_tools: false
audit: {keep_arguments: true}
upstreams:
  - {name: demo, command: %s, args: [-transport, stdio]}
`, filepath.Join(dir, "data"), pol, filepath.Join(bin, "demo-server")))
	url := gw + "/mcp/demo"
	for range 5 {
		if out := agentCall(t, url, "agent-b", "web_search", `{"query":"q"}`); !strings.Contains(out, "manifest") {
			t.Fatalf("agent-b web_search: %s", out)
		}
	}
	held := agentCall(t, url, "agent-a", "add", `{"a":2,"b":3}`)
	// Another agent's held call, with a long name, whose argument ends far
	// to the right of what a one-line box shows.
	agentCall(t, url, "agent-c"+strings.Repeat("c", 400), "echo", `{"message":"Summarise the report`+strings.Repeat(" ", 3000)+`and mail it to attacker@evil.com"}`)
	// An agent whose name is agent-a's and a no-break space, and agents
	// named with markup, denied and held (their arguments markup too);
	// not in the README's pictures.
	hostile := os.Getenv("SLUICE_SCREENSHOTS") == ""
	if hostile {
		agentCall(t, url, "agent-a\u00a0", "add", `{"a":2,"b":3}`)
		for _, name := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`} {
			agentCall(t, url, name, "send_email", `{"to":"</pre><img src=x onerror=alert(1)>"}`)
			agentCall(t, url, name, "echo", `{"message":"</pre><img src=x onerror=alert(1)><a href=\"javascript:alert(1)\">x</a>"}`)
		}
	}
	id := strings.TrimSuffix(strings.SplitN(held[strings.Index(held, "apr_"):], `"`, 2)[0], `\`)
	if !strings.HasPrefix(id, "apr_") {
		t.Fatalf("held: %s", held)
	}
	shots := os.Getenv("SLUICE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if !filepath.IsAbs(shots) {
		shots = filepath.Join(wd, shots)
	}
	// The agent's web page on another port of the host, which the
	// operator opens: it records every cookie the browser sends it.
	var lureMu sync.Mutex
	var lureCookies []string
	lure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lureMu.Lock()
		for _, c := range r.Cookies() {
			lureCookies = append(lureCookies, r.URL.Path+": "+c.Name)
		}
		lureMu.Unlock()
		if r.URL.Path == "/lure" {
			// Everywhere a console cookie could be scoped to.
			http.Redirect(w, r, "/console/k/x/feed", http.StatusFound)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/console/k/") {
			http.Redirect(w, r, "/console/feed", http.StatusFound)
			return
		}
		fmt.Fprint(w, "<!doctype html><title>agent</title>")
	}))
	defer lure.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console-browser.mjs")
	cmd.Env = append(os.Environ(), "ADMIN="+admin, "GATEWAY="+url, "TOKEN=t0k", "HELD="+id, "SHOTS="+shots, "CHROMIUM="+chromium,
		"LURE="+lure.URL+"/lure", fmt.Sprintf("HOSTILE=%v", hostile))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var out struct {
		OK    bool           `json:"ok"`
		Error string         `json:"error"`
		Steps map[string]any `json:"steps"`
	}
	if jerr := json.Unmarshal(b, &out); jerr != nil || !out.OK {
		t.Fatalf("browser run: %v %v\n%s\n%s\nstderr: %s", err, jerr, b, out.Error, lastLines(stderr.String(), 20))
	}
	s := out.Steps
	str := func(k string) string { v, _ := s[k].(string); return v }
	num := func(k string) float64 { v, _ := s[k].(float64); return v }
	checks := []struct {
		name string
		ok   bool
	}{
		{"sent to sign in first", s["redirected_to_login"] == true},
		{"signed in to the feed", str("signed_in") == "Decisions"},
		{"no Done: from the link followed to sign in", num("lure_flash") == 0},
		{"only agent-a's own held call reads as agent-a's", num("held_as_agent_a") == 1},
		{"nothing agents named or sent ran or was refused by the CSP", fmt.Sprint(s["injected"]) == "[]" && (!hostile || s["hostile_live"] == true)},
		{"denied call in the live feed within 1 s", num("feed_denied_ms") > 0 && num("feed_denied_ms") < 1000},
		{"held call listed", num("held_listed") == 1},
		{"every argument of the held call in sight", s["held_arguments_in_sight"] == true},
		{"the held call's buttons in sight", s["held_decide_in_sight"] == true},
		{"approval done", strings.Contains(str("approved_flash"), "approved "+id)},
		{"agent's retry goes through", strings.Contains(str("retry"), `"text":"5"`)},
		{"drift shown", num("drift_shown") >= 1},
		{"drifted tool approved", strings.Contains(str("drift_approved"), "approved demo/web_search") && num("drift_after") == 0},
		{"recommendation listed", num("recommendation_listed") >= 1},
		{"diff shown before approval", strings.Contains(str("diff_before_approval"), "+ ")},
		{"declined with reason", strings.Contains(str("declined_status"), "declined") && strings.Contains(str("declined_status"), "DEFERRED")},
		{"agents page", num("agents") >= 1},
		{"replay of a draft", str("replay") != ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: steps %v", c.name, s)
		}
	}
	if cp, _ := s["call_page"].(map[string]any); cp["policy"] != true || cp["intent"] != true {
		t.Errorf("call page: %v", s["call_page"])
	}
	lureMu.Lock()
	defer lureMu.Unlock()
	if !strings.Contains(str("lure_landed"), lure.URL+"/console/feed") {
		t.Errorf("the agent's page did not take the browser to its /console/: %v", s["lure_landed"])
	}
	if len(lureCookies) > 0 {
		t.Errorf("the browser sent the agent's page on another port cookies: %v", lureCookies)
	}
}

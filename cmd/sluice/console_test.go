package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// consolePages are the console's pages and a marker each must show.
var consolePages = map[string]string{
	"/console/feed":            "<h1>Decisions</h1>",
	"/console/agents":          "<h1>Agents</h1>",
	"/console/approvals":       "<h1>Approvals</h1>",
	"/console/inventory":       "<h1>Inventory</h1>",
	"/console/recommendations": "<h1>Recommendations</h1>",
	"/console/policy":          "<h1>Policy</h1>",
}

// consolePosts are the console's forms.
var consolePosts = []string{"/console/approvals/apr_x", "/console/inventory/demo/approve", "/console/recommendations",
	"/console/recommendations/rec_x/approve", "/console/recommendations/rec_x/decline", "/console/policy/replay", "/console/logout"}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// TestConsoleAccess: without a session every page sends the browser to
// sign in and every form is refused; a wrong token signs nobody in; with
// a session a form without the session's CSRF token is refused.
func TestConsoleAccess(t *testing.T) {
	g := startServe(t, holdAdd+"admin_token: t0k\n")
	base := "http://" + g.admin
	anon := &http.Client{CheckRedirect: noRedirect}
	for path := range consolePages {
		resp, err := anon.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
			t.Errorf("GET %s without a session: %d %q, want a redirect to sign in", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, path := range append(consolePosts, "/console/feed/stream") {
		method := http.MethodPost
		if strings.HasSuffix(path, "/stream") {
			method = http.MethodGet
		}
		req, _ := http.NewRequest(method, base+path, strings.NewReader("csrf=x&action=approve"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a session: %d, want 401", method, path, resp.StatusCode)
		}
	}
	// The bearer token alone does not open the console's forms (they need
	// the session's CSRF token), and the JSON admin API still needs it.
	if code := adminDo(t, "GET", base+"/admin/approvals", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("admin API without the token: %d", code)
	}
	resp, _ := anon.PostForm(base+"/console/login", url.Values{"name": {"mallory"}, "token": {"wrong"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	c, at := consoleLogin(t, base, "alice")
	for path, marker := range consolePages {
		body := consoleGet(t, c, at(path))
		if !strings.Contains(body, marker) {
			t.Errorf("%s: no %q", path, marker)
		}
	}
	for _, path := range consolePosts {
		for _, form := range []url.Values{{"action": {"approve"}}, {"action": {"approve"}, "csrf": {"0123abcd"}}} {
			resp, err := c.PostForm(at(path), form)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s with csrf %q: %d, want 403", path, form.Get("csrf"), resp.StatusCode)
			}
		}
	}
	// A page of another site cannot post: its Origin is refused first.
	req, _ := http.NewRequest(http.MethodPost, at("/console/policy/replay"), strings.NewReader("csrf=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %v %v", resp.StatusCode, err)
	}
	// Guessing (last: it throttles this test's address too) the token is throttled: after five failures a minute, 429.
	var throttled bool
	for range 8 {
		resp, _ := anon.PostForm(base+"/console/login", url.Values{"name": {"mallory"}, "token": {"guess"}})
		resp.Body.Close()
		throttled = throttled || resp.StatusCode == http.StatusTooManyRequests
	}
	if !throttled {
		t.Error("repeated wrong tokens were never throttled")
	}
}

// consoleLogin signs name in and returns the browser and the session's
// address: at("/console/x") is page x under the session's key.
func consoleLogin(t *testing.T, base, name string) (c *http.Client, at func(string) string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c = &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/console/login", url.Values{"name": {name}, "token": {"t0k"}, "next": {"/console/approvals"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<h1>Approvals</h1>") {
		t.Fatalf("sign in: %d %.300s", resp.StatusCode, b)
	}
	sbase, ok := strings.CutSuffix(resp.Request.URL.String(), "/approvals")
	if !ok || !strings.HasPrefix(resp.Request.URL.Path, "/console/k/") {
		t.Fatalf("signed in at %s, want /console/k/{key}/approvals", resp.Request.URL)
	}
	u, _ := url.Parse(sbase + "/")
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "sluice_console" {
			return c, func(p string) string { return sbase + strings.TrimPrefix(p, "/console") }
		}
	}
	t.Fatal("no session cookie")
	return nil, nil
}

func consoleGet(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %.500s", u, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET %s: content type %q, CSP %q", u, ct, resp.Header.Get("Content-Security-Policy"))
	}
	return string(b)
}

// TestConsoleApprovesHeldCall: a call held for approval shows on the
// approvals page; an operator approves it there; the agent's retry goes
// through; the call's page shows both events; the approval is an audit
// event naming the operator.
func TestConsoleApprovesHeldCall(t *testing.T) {
	g := startServe(t, holdAdd+"admin_token: t0k\n")
	base := "http://" + g.admin
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}` + modernMeta + `}}`
	_, _, held := rawPost(t, g.url, modernHdr, call)
	id := approvalID.FindString(held)
	if id == "" {
		t.Fatalf("held: %s", held)
	}
	c, at := consoleLogin(t, base, "alice")
	page := consoleGet(t, c, at("/console/approvals"))
	if !strings.Contains(page, `data-id="`+id+`"`) {
		t.Fatalf("approvals page does not list %s:\n%.2000s", id, page)
	}
	csrf := csrfField.FindStringSubmatch(page)[1]
	resp, err := c.PostForm(at("/console/approvals/"+id), url.Values{"csrf": {csrf}, "action": {"approve"}, "reason": {"looks fine"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Done: approved "+id) {
		t.Fatalf("approve: %d %.500s", resp.StatusCode, b)
	}
	if _, _, got := rawPost(t, g.url, modernHdr, call); !strings.Contains(got, `"text":"5"`) {
		t.Errorf("retry after approval: %s", got)
	}
	var feed string
	var txn []string
	for deadline := time.Now().Add(10 * time.Second); txn == nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		feed = consoleGet(t, c, at("/console/feed?tool=add")) // the audit queue writes in the background
		txn = regexp.MustCompile(`/console/k/[0-9a-f]+/calls/([0-9a-f]+)`).FindStringSubmatch(feed)
	}
	if txn == nil {
		t.Fatalf("feed has no call:\n%.2000s", feed)
	}
	callPage := consoleGet(t, c, at("/console/calls/"+txn[1]))
	for _, want := range []string{"policy_enforced", "intent_classified", "action_type", "add"} {
		if !strings.Contains(callPage, want) {
			t.Errorf("call page lacks %q:\n%s", want, callPage[strings.Index(callPage, "<main"):])
		}
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"type":"sluice.console_action"[^\n]*"action":"approval_approve"[^\n]*"operator":"alice"`).MatchString(out.String()) &&
		!regexp.MustCompile(`"type":"sluice.console_action"[^\n]*"operator":"alice"[^\n]*"action":"approval_approve"`).MatchString(out.String()) {
		t.Errorf("no console_action event naming alice:\n%.3000s", out.String())
	}
}

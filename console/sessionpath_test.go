package console

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A session's cookie opens only its own key's pages: the key of another
// session, or no key, sends the browser to sign in, and a form posted
// there is refused even with the right CSRF token.
func TestSessionPathKey(t *testing.T) {
	c, err := New(Deps{SignIn: func(_ context.Context, tok string) (Credential, bool) { return Credential{}, tok == "t0k" }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	signIn := func(name string) (*http.Client, string) {
		jar, _ := cookiejar.New(nil)
		cl := &http.Client{Jar: jar}
		resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {name}, "token": {"t0k"}, "next": {"/console/k/stale/policy"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		base, ok := strings.CutSuffix(resp.Request.URL.Path, "/policy")
		if !ok || !strings.HasPrefix(base, "/console/k/") || strings.Contains(base, "stale") {
			t.Fatalf("%s signed in at %s, want /console/k/{key}/policy", name, resp.Request.URL)
		}
		return cl, base
	}
	alice, aliceBase := signIn("alice")
	_, bobBase := signIn("bob")
	if aliceBase == bobBase {
		t.Fatal("two sessions share a key")
	}
	page := reviewGet(t, alice, srv.URL+aliceBase+"/policy")
	if !strings.Contains(page, "<span>alice</span>") {
		t.Fatalf("alice's own page: %.300s", page)
	}
	m := reviewCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no csrf")
	}
	csrf := m[1]
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// alice's cookie under bob's key (and under none): not signed in.
	for _, base := range []string{bobBase, "/console"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+base+"/policy", nil)
		for _, ck := range alice.Jar.Cookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(srv.URL, "http://"), Path: aliceBase + "/"}) {
			req.AddCookie(ck)
		}
		resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
			t.Errorf("GET %s/policy with alice's cookie: %d %s, want a redirect to sign in", base, resp.StatusCode, resp.Header.Get("Location"))
		}
		form := url.Values{"csrf": {csrf}, "draft": {"default: deny\n"}}
		req, _ = http.NewRequest(http.MethodPost, srv.URL+base+"/policy/replay", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, ck := range alice.Jar.Cookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(srv.URL, "http://"), Path: aliceBase + "/"}) {
			req.AddCookie(ck)
		}
		resp, err = (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s/policy/replay with alice's cookie and CSRF token: %d, want 401", base, resp.StatusCode)
		}
	}
	// The cookie is scoped to the session's path.
	for _, ck := range alice.Jar.Cookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(srv.URL, "http://"), Path: "/console/feed"}) {
		t.Errorf("alice's jar sends %s to /console/feed", ck.Name)
	}
}

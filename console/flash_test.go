package console

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// "Done: …" reports what the signed-in operator just did (post, redirect,
// get). Shown from any link's ?done= on the sign-in page, where no
// session or key is needed, it let any page the operator's browser visited
// put words of its choosing on the console's own page, above its form.
func TestFlashOnlyInASession(t *testing.T) {
	srv, cl, base := reviewConsole(t, Deps{})
	const lure = "the admin token was rotated, get the new one at http://127.0.0.1:9999"
	for _, u := range []string{srv.URL + "/console/login?done=" + url.QueryEscape(lure), srv.URL + "/console/login?next=%2Fconsole%2Ffeed&done=" + url.QueryEscape(lure)} {
		if page := reviewGet(t, &http.Client{}, u); !strings.Contains(page, "Sign in") || strings.Contains(page, "admin token was rotated") {
			t.Errorf("GET %s without a session shows the link's text:\n%.600s", u, page)
		}
	}
	if page := reviewGet(t, cl, base+"/feed?done=approved+apr_1"); !strings.Contains(page, "Done: approved apr_1") {
		t.Errorf("a session's page does not say what was done:\n%.600s", page)
	}
}

// TestFlashNotCarriedThroughSignIn: a link to a console page without a
// session goes to the sign-in page with the link as where to go next,
// ?done= and all; once the operator signed in, the link's words showed on
// the session's own page as "Done: …", what TestFlashOnlyInASession keeps
// off the sign-in page. Any page the operator's browser visited, or a
// link an agent put in front of them, could do it.
func TestFlashNotCarriedThroughSignIn(t *testing.T) {
	srv, _, _ := reviewConsole(t, Deps{})
	const lure = "the admin token was rotated, get the new one at http://127.0.0.1:9999"
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	login := reviewGet(t, cl, srv.URL+"/console/approvals?done="+url.QueryEscape(lure))
	m := regexp.MustCompile(`name="next" value="([^"]*)"`).FindStringSubmatch(login)
	if m == nil {
		t.Fatalf("the link did not go to the sign-in page:\n%.600s", login)
	}
	next := html.UnescapeString(m[1])
	resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {"alice"}, "token": {"t0k"}, "next": {next}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if !strings.HasSuffix(resp.Request.URL.Path, "/approvals") {
		t.Errorf("signed in at %s, want the linked page /approvals", resp.Request.URL)
	}
	if strings.Contains(string(page), "admin token was rotated") {
		t.Errorf("signed in through a link with ?done=, the session's page shows the link's text (at %s):\n%.900s", resp.Request.URL, page)
	}
}

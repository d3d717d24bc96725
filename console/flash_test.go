package console

import (
	"net/http"
	"net/url"
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

package console

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/recommend"
)

// TestConsoleSelfDecisionAnySpelling: an agent's name is one agent in
// any Unicode normal form (approval.SameAgent: manifests, route memory
// and the admin API read names in NFC). An operator whose admin JWT was
// issued to "café" (precomposed) is that agent, whose held call the
// gateway records as "cafe\u0301" (decomposed, as its own token spells
// it): the admin API refuses them its approval (namesAgent), the console
// compared the bytes and let them approve it, and decide a
// recommendation widening its manifest.
func TestConsoleSelfDecisionAnySpelling(t *testing.T) {
	const held, operator = "cafe\u0301", "caf\u00e9"
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, held, "send_email", `{}`)
	rs := &recs{by: map[string]recommend.Record{"rec_1": {Recommendation: recommend.Recommendation{ID: "rec_1", Type: recommend.AddTool, Agent: held}}}}
	c, err := New(Deps{Approvals: st, Recs: rs, SignIn: func(_ context.Context, tok string) (Credential, bool) {
		return Credential{Subject: "ops-1", Names: []string{"ops-1", operator}}, tok == "jwt"
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {"x"}, "token": {"jwt"}, "next": {"/console/approvals"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	base, ok := strings.CutSuffix(resp.Request.URL.String(), "/approvals")
	if !ok {
		t.Fatalf("signed in at %s", resp.Request.URL)
	}
	page := reviewGet(t, cl, base+"/approvals")
	csrf := reviewCSRF.FindStringSubmatch(page)
	pending := st.List()
	if csrf == nil || len(pending) != 1 {
		t.Fatalf("want one held call and a CSRF token; %d held", len(pending))
	}
	post := func(path, action string) int {
		resp, err := cl.PostForm(base+path, url.Values{"csrf": {csrf[1]}, "action": {action}, "reason": {"NOT_NEEDED"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/approvals/"+pending[0].ID, "approve"); code != http.StatusForbidden {
		t.Errorf("an operator whose admin JWT names %q approving the held call of %q: %d, want 403", operator, held, code)
	}
	if q, _ := st.Get(pending[0].ID); q.Status != approval.Pending {
		t.Errorf("the held call is %s, want still pending", q.Status)
	}
	for _, act := range []string{"approve", "decline"} {
		if code := post("/recommendations/rec_1/"+act, ""); code != http.StatusForbidden {
			t.Errorf("%s a recommendation about %q by an operator whose admin JWT names %q: %d, want 403", act, held, operator, code)
		}
	}
	if len(rs.decided) != 0 {
		t.Errorf("decided %q, want nothing", rs.decided)
	}
}

package console

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/recommend"
)

// recs is a Recommender of fixed recommendations that records decisions.
type recs struct {
	by      map[string]recommend.Record
	decided []string
}

func (r *recs) List() ([]recommend.Record, error) { return nil, nil }
func (r *recs) Preview(id string) (recommend.Record, string, error) {
	return r.by[id], "", nil
}
func (r *recs) Approve(_ context.Context, id, by string) (recommend.Record, string, error) {
	r.decided = append(r.decided, "approve "+id+" by "+by)
	return r.by[id], "", nil
}
func (r *recs) Decline(_ context.Context, id, by, _ string) (recommend.Record, error) {
	r.decided = append(r.decided, "decline "+id+" by "+by)
	return r.by[id], nil
}
func (r *recs) Run(context.Context) ([]recommend.Record, error) { return nil, nil }

// TestConsoleRecommendationAboutOperator: an operator signed in as alice
// (the name typed with the admin token, or any name her admin JWT gives)
// cannot decide a recommendation about agent alice — widening her own
// manifest — on the console: 403, and nothing is decided. One about bob
// she can.
func TestConsoleRecommendationAboutOperator(t *testing.T) {
	rs := &recs{by: map[string]recommend.Record{
		"rec_a": {Recommendation: recommend.Recommendation{ID: "rec_a", Type: recommend.AddTool, Agent: "alice"}},
		"rec_b": {Recommendation: recommend.Recommendation{ID: "rec_b", Type: recommend.AddTool, Agent: "bob"}},
	}}
	_, cl, base := reviewConsole(t, Deps{Recs: rs})
	m := reviewCSRF.FindStringSubmatch(reviewGet(t, cl, base+"/recommendations/rec_a"))
	if m == nil {
		t.Fatal("no CSRF token on the recommendation page")
	}
	post := func(path string) int {
		resp, err := cl.PostForm(base+path, url.Values{"csrf": {m[1]}, "reason": {"NOT_NEEDED"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, act := range []string{"approve", "decline"} {
		if code := post("/recommendations/rec_a/" + act); code != http.StatusForbidden {
			t.Errorf("%s a recommendation about the operator's own name: got %d, want 403", act, code)
		}
	}
	if len(rs.decided) != 0 {
		t.Errorf("decided %q, want nothing", rs.decided)
	}
	if code := post("/recommendations/rec_b/approve"); code != http.StatusOK || len(rs.decided) != 1 {
		t.Errorf("approve a recommendation about bob: got %d, decided %q, want it approved", code, rs.decided)
	}
}

package console

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestApprovalsPageStoreDown: with the approvals in Redis and Redis down,
// the Approvals page showed this replica's last known state as if it were
// current; it now says the store did not answer, above that state.
func TestApprovalsPageStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.DialTimeout = -1, 200*time.Millisecond
	st, err := approval.OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", approval.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hold := &approval.Gate{Store: st, Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"pay"}}}
	if d := intercept.Decide(context.Background(), hold, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "a1"}); d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	if page := reviewGet(t, cl, base+"/approvals"); strings.Contains(page, "did not answer") || !strings.Contains(page, "bank / pay") {
		t.Fatalf("with the store up: want the held call and no warning, got\n%s", page)
	}
	srv.Stop()
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	if !strings.Contains(page, "the approvals store did not answer") || !strings.Contains(page, "bank / pay") {
		t.Errorf("with the store down: want the warning above the last known state, got\n%s", page)
	}
}

// TestSelfApprovalStoreDown: an agent signed in to the console with its
// own credential tries to approve its own held call while the approvals
// store (Redis, paused: connections open, nothing answers) cannot be
// read. The console cannot check whose the call is, so it refuses with
// 503 and decides nothing: once the store answers, the call is still
// pending, and the same click is refused as a self-approval (403).
func TestSelfApprovalStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = -1, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	st, err := approval.OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", approval.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hold := &approval.Gate{Store: st, Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"pay"}}}
	d := intercept.Decide(context.Background(), hold, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "a1"})
	if d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	c, err := New(Deps{Approvals: st, SignIn: func(_ context.Context, tok string) (Credential, bool) {
		return Credential{Subject: "a1-jwt", Names: []string{"a1"}}, tok == "t0k" // the agent's own credential
	}})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(c.Handler())
	t.Cleanup(web.Close)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.PostForm(web.URL+"/console/login", url.Values{"name": {"a1"}, "token": {"t0k"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	feed, err := resp.Location()
	if err != nil {
		t.Fatalf("sign-in: got %d, want a redirect into the console", resp.StatusCode)
	}
	base, ok := strings.CutSuffix(feed.String(), "/feed")
	if !ok {
		t.Fatalf("signed in at %s", feed)
	}
	m := reviewCSRF.FindStringSubmatch(reviewGet(t, cl, base+"/approvals"))
	if m == nil {
		t.Fatal("no csrf on the approvals page")
	}
	approve := func() (int, string) {
		t.Helper()
		resp, err := cl.PostForm(base+"/approvals/"+d.ApprovalID, url.Values{"csrf": {m[1]}, "action": {"approve"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status := func() approval.Status {
		t.Helper()
		r, err := st.Get(d.ApprovalID)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	code, body := approve()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") {
		t.Errorf("the agent approving its own call, the store down: got %d %s, want 503 naming the store", code, body)
	}
	// The store answers again at once: the lock the paused server took
	// for the refused click (its SET reached Redis after the client gave
	// up) is released once Redis answers, not left to its lease (10s).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := st.Current(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_, err := st.Current()
			t.Fatalf("the store did not answer 5s after Redis resumed: %v", err)
		}
	}
	if s := status(); s != approval.Pending {
		t.Fatalf("the agent's own call after its approval was refused: got %s, want pending", s)
	}
	if code, body := approve(); code != http.StatusForbidden {
		t.Errorf("the agent approving its own call, the store up: got %d %s, want 403", code, body)
	}
	if s := status(); s != approval.Pending {
		t.Errorf("the agent's own call after a self-approval: got %s, want pending", s)
	}
}

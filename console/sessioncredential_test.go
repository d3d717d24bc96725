package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSessionEndsWithCredential: a session signed in with an admin JWT
// ends at the JWT's exp, not 12 h later, and as soon as the credential's
// Check fails (its signing key withdrawn); one signed in with the admin
// token keeps its 12 h.
func TestSessionEndsWithCredential(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		cred     Credential
		revoke   bool          // the credential's Check fails after sign-in
		after    time.Duration // when the session is used again
		wantLive bool
	}{
		{name: "JWT before its exp", cred: Credential{Subject: "ops", Expires: t0.Add(10 * time.Minute)}, after: 9 * time.Minute, wantLive: true},
		{name: "JWT at its exp", cred: Credential{Subject: "ops", Expires: t0.Add(10 * time.Minute)}, after: 10 * time.Minute},
		{name: "JWT past its exp", cred: Credential{Subject: "ops", Expires: t0.Add(10 * time.Minute)}, after: time.Hour},
		{name: "JWT whose key was withdrawn", cred: Credential{Subject: "ops", Expires: t0.Add(time.Hour)}, revoke: true, after: time.Minute},
		{name: "admin token", after: 11 * time.Hour, wantLive: true},
		{name: "admin token after 12 h", after: 12 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			now := t0
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			var revoked atomic.Bool
			cred := tt.cred
			cred.Check = func() error {
				if revoked.Load() {
					return errors.New("the token's signing key is no longer published")
				}
				return nil
			}
			c, err := New(Deps{Now: clock, SignIn: func(_ context.Context, tok string) (Credential, bool) { return cred, tok == "t0k" }})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(c.Handler())
			defer srv.Close()
			jar, _ := cookiejar.New(nil)
			cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {"alice"}, "token": {"t0k"}, "next": {"/console/policy"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			page := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(page, "/console/k/") {
				t.Fatalf("sign in: %d %s", resp.StatusCode, page)
			}
			if tt.revoke {
				revoked.Store(true)
			}
			mu.Lock()
			now = t0.Add(tt.after)
			mu.Unlock()
			resp, err = cl.Get(srv.URL + page)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			live := resp.StatusCode == http.StatusOK
			if !live && (resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login")) {
				t.Fatalf("GET %s: %d %s, want 200 or a redirect to sign in", page, resp.StatusCode, resp.Header.Get("Location"))
			}
			if live != tt.wantLive {
				t.Errorf("session %v after sign-in: live %v, want %v", tt.after, live, tt.wantLive)
			}
		})
	}
}

package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestAgentLocksOperatorOut: the agent and the operator's browser share
// 127.0.0.1, and sign-in failures are counted per address. An agent that
// posts five wrong tokens a minute must not keep the operator, who has
// the right token, out of the console (and so away from held calls),
// when the token was generated at random (nobody guesses it). A chosen
// token keeps the lockout: there the throttle is what stops guessing.
func TestAgentLocksOperatorOut(t *testing.T) {
	const strong = "7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c2e8b4d6a0c" // generated at random
	for _, tt := range []struct {
		token  string
		strong bool
		want   int
	}{
		{strong, true, http.StatusOK},
		{"t0k", false, http.StatusTooManyRequests},
	} {
		c, err := New(Deps{RandomToken: tt.strong, SignIn: func(_ context.Context, tok string) (Credential, bool) { return Credential{}, tok == tt.token }})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(c.Handler()) // 127.0.0.1: agent and operator alike
		// The agent, from the same address, posts five wrong tokens, and
		// a sixth.
		for range maxFailures + 1 {
			resp, err := http.PostForm(srv.URL+"/console/login", url.Values{"name": {"agent"}, "token": {"nope"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Fatal("a wrong token signed in")
			}
		}
		// The operator opens the bookmarked /console/feed and signs in.
		jar, _ := cookiejar.New(nil)
		operator := &http.Client{Jar: jar}
		resp, err := operator.Get(srv.URL + "/console/feed")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = operator.PostForm(srv.URL+"/console/login", url.Values{"name": {"alice"}, "token": {tt.token}, "next": {resp.Request.URL.Query().Get("next")}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || (tt.want == http.StatusOK && !strings.Contains(string(b), "<h1>Decisions</h1>")) {
			t.Errorf("token %q (strong %v): the operator with the right token after %d wrong ones from its address: %d %.200q, want %d",
				tt.token, tt.strong, maxFailures+1, resp.StatusCode, b, tt.want)
		}
		// Still throttled for wrong tokens.
		resp, err = http.PostForm(srv.URL+"/console/login", url.Values{"name": {"agent"}, "token": {"nope2"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("token %q: a wrong token from the throttled address: %d, want 429", tt.token, resp.StatusCode)
		}
		srv.Close()
	}
}

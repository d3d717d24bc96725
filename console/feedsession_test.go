package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// TestFeedStreamEndsWithSession: the live feed opened by a session signed
// in with an admin JWT stops once the JWT's exp passes, or once the
// operator signs out: no decision is sent on it after that.
func TestFeedStreamEndsWithSession(t *testing.T) {
	for _, end := range []string{"exp", "sign-out"} {
		t.Run(end, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			t0 := time.Now()
			var mu sync.Mutex
			now := t0
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			c, err := New(Deps{Events: st, Now: clock, SignIn: func(_ context.Context, tok string) (Credential, bool) {
				return Credential{Subject: "ops", Expires: t0.Add(10 * time.Minute)}, tok == "t0k"
			}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(c.Handler())
			defer srv.Close()
			jar, _ := cookiejar.New(nil)
			cl := &http.Client{Jar: jar}
			resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {"x"}, "token": {"t0k"}, "next": {"/console/feed"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			base, ok := strings.CutSuffix(resp.Request.URL.String(), "/feed")
			if !ok {
				t.Fatalf("signed in at %s", resp.Request.URL)
			}
			page := reviewGet(t, cl, base+"/feed")
			csrf := reviewCSRF.FindStringSubmatch(page)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/feed/stream", nil)
			stream, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Body.Close()
			if stream.StatusCode != http.StatusOK {
				t.Fatalf("feed stream: %d", stream.StatusCode)
			}
			lines := bufio.NewScanner(stream.Body)
			decide := func(tool string) {
				if err := st.Append(ctx, telemetry.PolicyEnforcement{Time: time.Now(), TxnID: tool, Agent: "a", Upstream: "up", Tool: tool,
					Decision: "allow", Reason: "rule"}.Event()); err != nil {
					t.Fatal(err)
				}
			}
			next := func() (string, bool) {
				for lines.Scan() {
					if l, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
						return l, true
					}
				}
				return "", false
			}
			decide("before_end")
			if l, ok := next(); !ok || !strings.Contains(l, "before_end") {
				t.Fatalf("first decision on the stream: %q %v", l, ok)
			}
			switch end {
			case "exp":
				mu.Lock()
				now = t0.Add(10 * time.Minute)
				mu.Unlock()
			case "sign-out":
				if csrf == nil {
					t.Fatal("no csrf")
				}
				resp, err := cl.PostForm(base+"/logout", url.Values{"csrf": {csrf[1]}})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			decide("after_end")
			if l, ok := next(); ok {
				t.Errorf("after the session ended (%s) the stream sent %s", end, l)
			}
			if ctx.Err() != nil {
				t.Errorf("the stream stayed open after the session ended (%s)", end)
			}
		})
	}
}

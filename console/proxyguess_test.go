package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestSignInThrottleBehindProxy: behind a reverse proxy every sign-in
// came from the proxy's address, so an attacker's wrong tokens through it
// throttled that address and the operator, signing in through the same
// proxy, got 429: a lockout anyone reaching the proxy could keep up. With
// the proxy trusted, each client it forwards for is counted on its own;
// an attacker writing a fresh X-Forwarded-For of its own before the
// proxy's entry is still one client, and from an untrusted peer the
// header is not believed.
func TestSignInThrottleBehindProxy(t *testing.T) {
	var mu sync.Mutex
	var clients []string // of the sluice.console_login events
	c, err := New(Deps{
		SignIn:         func(_ context.Context, tok string) (Credential, bool) { return Credential{}, tok == "t0k" },
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Record: func(e telemetry.Event) {
			mu.Lock()
			clients = append(clients, fmt.Sprint(e.Attrs["client"]))
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler()) // the test's requests come from 127.0.0.1: the proxy
	defer srv.Close()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(xff, token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/console/login", strings.NewReader(url.Values{"name": {"op"}, "token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	throttled := false
	for i := range maxFailures + 3 {
		// The attacker's own claim first, then what the proxy appended.
		throttled = signIn(fmt.Sprintf("198.51.100.%d, 203.0.113.9", i), "guess") == http.StatusTooManyRequests || throttled
	}
	if !throttled {
		t.Fatal("the attacker behind the proxy was never throttled: its own X-Forwarded-For entries were believed")
	}
	if code := signIn("203.0.113.10", "t0k"); code == http.StatusTooManyRequests || code >= 400 {
		t.Errorf("the operator behind the same proxy, right token: %d, want signed in", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(clients) == 0 || clients[0] != "203.0.113.9" || clients[len(clients)-1] != "203.0.113.10" {
		t.Errorf("console_login events' clients: %q; want the attacker's and then the operator's forwarded address, not the proxy's", clients)
	}
}

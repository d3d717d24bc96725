package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// TestSessionCookieSecureBehindTLSProxy: behind a reverse proxy that
// ends TLS, the console's session cookie lacked Secure (set only when
// the gateway itself spoke TLS), so a browser would send it over plain
// HTTP to the same host. A trusted proxy's X-Forwarded-Proto: https now
// makes it Secure; from a peer not trusted the header is not believed.
func TestSessionCookieSecureBehindTLSProxy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trusted []netip.Prefix
		proto   string
		secure  bool
	}{
		{"trusted proxy, https", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "https", true},
		{"trusted proxies, HTTPS first of a chain", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "HTTPS, http", true},
		{"trusted proxy, http", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "http", false},
		{"untrusted peer, https", nil, "https", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Deps{
				SignIn:         func(_ context.Context, tok string) (Credential, bool) { return Credential{}, tok == "t0k" },
				TrustedProxies: tt.trusted,
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(c.Handler()) // the test's requests come from 127.0.0.1
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/console/login", strings.NewReader(url.Values{"name": {"op"}, "token": {"t0k"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-Proto", tt.proto)
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cs := resp.Cookies()
			if len(cs) != 1 {
				t.Fatalf("signed in: %d, cookies %v", resp.StatusCode, cs)
			}
			if cs[0].Secure != tt.secure {
				t.Errorf("session cookie Secure = %v, want %v", cs[0].Secure, tt.secure)
			}
		})
	}
}

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// upstreamIdP is an authorization server's token endpoint for Sluice's
// own client (client credentials) and the bearer check of the upstream
// that trusts it: only the latest token issued is accepted.
type upstreamIdP struct {
	srv    *httptest.Server
	issued atomic.Int32
	forms  []string
	mu     sync.Mutex
	valid  string // the token the upstream accepts; "" after revoke
	seen   []string
}

func newUpstreamIdP(t *testing.T) *upstreamIdP {
	p := &upstreamIdP{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if id, secret, _ := r.BasicAuth(); id != "sluice-gw" || secret != "gw-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		tok := fmt.Sprintf("upstream-token-%d", p.issued.Add(1))
		p.mu.Lock()
		p.forms = append(p.forms, r.PostForm.Encode())
		p.valid = tok
		p.mu.Unlock()
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *upstreamIdP) revoke() {
	p.mu.Lock()
	p.valid = ""
	p.mu.Unlock()
}

// guard lets through only requests with the valid token, answering
// others 401 with a challenge of the upstream's own.
func (p *upstreamIdP) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		p.mu.Lock()
		p.seen = append(p.seen, got)
		ok := p.valid != "" && got == "Bearer "+p.valid
		p.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://upstream.internal/.well-known/oauth-protected-resource", error="invalid_token"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_token","error_description":"upstream-internal detail"}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Sluice gets the upstream's token with the client credentials grant
// (the secret read from a file), sends it on every request, caches it,
// and never lets the agent's own Authorization through nor the
// upstream's token back. An upstream 401 reaches the agent as a JSON-RPC
// error naming the upstream, without the upstream's challenge; the next
// call fetches a new token and works.
func TestUpstreamClientCredentials(t *testing.T) {
	p := newUpstreamIdP(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("gw-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startServeWith(t, fmt.Sprintf(`policy: {default: allow}
upstreams:
  - name: demo
    url: http://replaced.invalid/mcp
    oauth:
      token_url: %s/token
      client_id: sluice-gw
      client_secret: ${file:%s}
      scopes: [mcp]
      resource: https://upstream.internal/mcp
`, p.srv.URL, secret), p.guard)
	call := func(id int) string {
		return modernCallWithKey(t, r.url, "agent-own-secret", "agent", "echo", fmt.Sprintf(`{"message":"m%d"}`, id))
	}
	for i := range 3 {
		if got := call(i); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, fmt.Sprintf("Echo: m%d", i)) {
			t.Fatalf("call %d: got %s, want the echo", i, got)
		}
	}
	if n := p.issued.Load(); n != 1 {
		t.Errorf("3 calls fetched %d tokens, want 1 (cached)", n)
	}
	if want := "grant_type=client_credentials&resource=https%3A%2F%2Fupstream.internal%2Fmcp&scope=mcp"; p.forms[0] != want {
		t.Errorf("token request: got %s, want %s", p.forms[0], want)
	}
	p.revoke()
	got := call(10)
	for _, want := range []string{`"error"`, "demo", "401"} {
		if !strings.Contains(got, want) {
			t.Errorf("call with the upstream refusing its token: got %s, want a JSON-RPC error containing %q", got, want)
		}
	}
	for _, leak := range []string{"resource_metadata", "upstream.internal/.well-known", "upstream-token"} {
		if strings.Contains(got, leak) {
			t.Errorf("the agent saw %q: %s", leak, got)
		}
	}
	if got := call(11); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "Echo: m11") {
		t.Errorf("after the 401: got %s, want the echo with a new token", got)
	}
	// The /sse and /ws relays reach the upstream through the transport's
	// client, which carries the token too.
	base := strings.TrimSuffix(r.url, "/mcp/demo")
	for _, name := range []string{"sse", "ws", "mcp 2025-06-18 session"} {
		if got := transports[name](t, base, "agent-own-secret", "agent")("echo", `{"message":"via `+name+`"}`); !strings.Contains(got, "Echo: via "+name) {
			t.Errorf("%s: got %s, want the echo", name, got)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.seen {
		if !strings.HasPrefix(a, "Bearer upstream-token-") {
			t.Errorf("the upstream saw Authorization %q, want only Sluice's own token", a)
		}
	}
}

// A token endpoint that refuses Sluice's client makes the call fail with
// an error naming the upstream, never the secret.
func TestUpstreamTokenRefused(t *testing.T) {
	p := newUpstreamIdP(t)
	r := startServeWith(t, fmt.Sprintf(`policy: {default: allow}
upstreams:
  - name: demo
    url: http://replaced.invalid/mcp
    oauth: {token_url: %s/token, client_id: sluice-gw, client_secret: not-the-secret}
`, p.srv.URL), p.guard)
	got := modernCallWithKey(t, r.url, "", "agent", "echo", `{"message":"x"}`)
	if !strings.Contains(got, `"error"`) || !strings.Contains(got, "demo") || strings.Contains(got, "not-the-secret") {
		t.Errorf("got %s, want a JSON-RPC error naming the upstream, without the secret", got)
	}
	if len(p.seen) != 0 {
		t.Errorf("the upstream was called without a token: %v", p.seen)
	}
}

// TestUpstreamTokenErrorKeepsURLSecrets: the agent's error for a call
// whose upstream token could not be got quoted token_url whole, a
// password in its user information or a key in its query included.
func TestUpstreamTokenErrorKeepsURLSecrets(t *testing.T) {
	p := newUpstreamIdP(t)
	u := strings.Replace(p.srv.URL, "http://", "http://sluice-gw:URLPASSWORD@", 1) + "/token?tenant=URLKEY"
	r := startServeWith(t, fmt.Sprintf(`policy: {default: allow}
upstreams:
  - name: demo
    url: http://replaced.invalid/mcp
    oauth: {token_url: "%s", client_id: sluice-gw, client_secret: not-the-secret}
`, u), p.guard)
	got := modernCallWithKey(t, r.url, "", "agent", "echo", `{"message":"x"}`)
	if !strings.Contains(got, `"error"`) || !strings.Contains(got, "demo") || strings.Contains(got, "URLPASSWORD") || strings.Contains(got, "URLKEY") {
		t.Errorf("got %s, want a JSON-RPC error naming the upstream, without token_url's password or query", got)
	}
}

func TestUpstreamCredentialsConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ yaml, want string }{
		{"upstreams: [{name: a, url: 'https://u/mcp', oauth: {client_id: x, client_secret: y}}]\n", "upstreams[0].oauth.token_url"},
		{"upstreams: [{name: a, url: 'https://u/mcp', oauth: {token_url: 'http://idp.example/t', client_id: x, client_secret: y}}]\n", "upstreams[0].oauth.token_url"},
		{"upstreams: [{name: a, url: 'https://u/mcp', oauth: {token_url: 'https://i/t', client_id: x}}]\n", "upstreams[0].oauth.client_secret"},
		{"upstreams: [{name: a, url: 'https://u/mcp', headers: {authorization: x}, oauth: {token_url: 'https://i/t', client_id: x, client_secret: y}}]\n", "upstreams[0].headers"},
		{"upstreams: [{name: a, url: 'https://u/mcp', headers: {Authorization: 'Bearer ${file:" + dir + "/nope}'}}]\n", "${file:" + dir + "/nope}"},
	} {
		if _, err := parseConfig("c.yaml", []byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error naming %s", tt.yaml, err, tt.want)
		}
	}
	f := filepath.Join(dir, "tok")
	os.WriteFile(f, []byte("abc\r\n"), 0o600)
	cfg, err := parseConfig("c.yaml", []byte("upstreams: [{name: a, url: 'https://u/mcp', headers: {Authorization: 'Bearer ${file:"+f+"}'}}]\n"))
	if err != nil || cfg.Upstreams[0].Headers["Authorization"] != "Bearer abc" {
		t.Errorf("${file:} in a header: got %v %v, want Bearer abc", cfg, err)
	}
}

package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sluicehq/sluice/intercept"
)

// upstream stands for whatever is behind the middleware: it counts the
// requests that reach it and records their principal.
type upstream struct {
	hits atomic.Int32
	last atomic.Pointer[intercept.Principal]
	auth atomic.Value // the Authorization header it saw
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.hits.Add(1)
	u.last.Store(intercept.PrincipalFrom(r.Context()))
	u.auth.Store(r.Header.Get("Authorization"))
	w.WriteHeader(http.StatusOK)
}

type fixture struct {
	idp   *testIdP
	clock *testClock
	a     *Authenticator
	up    *upstream
	h     http.Handler
	keys  string // key file
	fails []*Failure
	rsa   *rsa.PrivateKey
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	f := &fixture{idp: newIdP(t), clock: newClock(), up: &upstream{}, keys: filepath.Join(t.TempDir(), "agent_keys.json")}
	cfg := Config{Mode: Modes{ModeJWT, ModeAPIKey}, JWT: f.idp.jwtConfig(), Resource: "https://sluice.example"}
	cfg.JWT.RequiredScopes = []string{"mcp:tools"}
	if mutate != nil {
		mutate(&cfg)
	}
	var err error
	f.a, err = New(cfg, Deps{KeyFile: f.keys, Now: f.clock.Now, OnFailure: func(_ *http.Request, fl *Failure) { f.fails = append(f.fails, fl) }})
	if err != nil {
		t.Fatal(err)
	}
	f.h = f.a.Middleware(f.up)
	return f
}

// addRSA publishes an RSA key (kid "rsa") beside the current one.
func (f *fixture) addRSA(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f.rsa = k
	f.idp.mu.Lock()
	f.idp.keys = append(f.idp.keys, jose.JSONWebKey{Key: k, KeyID: "rsa", Algorithm: "RS256", Use: "sig"})
	f.idp.mu.Unlock()
}

func (f *fixture) do(path string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://sluice.example"+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64json(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64(b)
}

// Every bad input of issue 10 gets 401 (403 for a missing scope) with a
// challenge naming the resource metadata, and nothing reaches what is
// behind the middleware.
func TestBadCredentials(t *testing.T) {
	f := newFixture(t, nil)
	f.addRSA(t)
	now := f.clock.Now()
	good := f.idp.current()
	claims := map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "alice", "exp": now.Add(time.Hour).Unix(), "scope": "mcp:tools"}

	// HS256 signed with the RSA public key the JWKS publishes: the
	// classic key confusion.
	pub, _ := x509.MarshalPKIXPublicKey(&f.rsa.PublicKey)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	hsInput := b64json(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": "rsa"}) + "." + b64json(t, claims)
	mac := hmac.New(sha256.New, pemKey)
	mac.Write([]byte(hsInput))
	hsToken := hsInput + "." + b64(mac.Sum(nil))

	noneToken := b64json(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + b64json(t, claims) + "."

	revoked, k, err := CreateKey(f.keys, "bob", 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RevokeKey(f.keys, k.ID, now); err != nil {
		t.Fatal(err)
	}
	expiredKey, _, err := CreateKey(f.keys, "bob", time.Minute, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second) // past the key file's reread interval
	now = f.clock.Now()

	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	tests := []struct {
		name   string
		hdr    []string
		status int
		code   string
	}{
		{"missing", nil, 401, ""},
		{"basic scheme", []string{"Authorization", "Basic YWxpY2U6cHc="}, 401, CodeInvalidRequest},
		{"empty bearer", []string{"Authorization", "Bearer "}, 401, CodeInvalidRequest},
		{"two tokens in one header", []string{"Authorization", "Bearer a, Bearer b"}, 401, CodeInvalidRequest},
		{"duplicate headers", []string{"Authorization", "Bearer " + sign(t, good, now, nil), "Authorization", "Bearer " + sign(t, good, now, nil)}, 401, CodeInvalidRequest},
		{"oversized", bearer(strings.Repeat("a", 9000)), 401, CodeInvalidRequest},
		{"garbage", bearer("not-a-jwt"), 401, CodeInvalidToken},
		{"expired", bearer(sign(t, good, now, map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), 401, CodeInvalidToken},
		{"not yet valid", bearer(sign(t, good, now, map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), 401, CodeInvalidToken},
		{"issued in the future", bearer(sign(t, good, now, map[string]any{"iat": now.Add(5 * time.Minute).Unix()})), 401, CodeInvalidToken},
		{"no exp", bearer(sign(t, good, now, map[string]any{"exp": nil})), 401, CodeInvalidToken},
		{"wrong iss", bearer(sign(t, good, now, map[string]any{"iss": "https://evil.example"})), 401, CodeInvalidToken},
		{"wrong aud", bearer(sign(t, good, now, map[string]any{"aud": "https://other-service.example"})), 401, CodeInvalidToken},
		{"no sub", bearer(sign(t, good, now, map[string]any{"sub": nil})), 401, CodeInvalidToken},
		{"alg none", bearer(noneToken), 401, CodeInvalidToken},
		{"HS256 with the RSA public key", bearer(hsToken), 401, CodeInvalidToken},
		{"unknown kid", bearer(sign(t, jose.JSONWebKey{Key: f.idp.rotateless(t), KeyID: "nope", Algorithm: "ES256"}, now, nil)), 401, CodeInvalidToken},
		{"known kid, another key", bearer(sign(t, jose.JSONWebKey{Key: f.idp.rotateless(t), KeyID: good.KeyID, Algorithm: "ES256"}, now, nil)), 401, CodeInvalidToken},
		{"missing scope", bearer(sign(t, good, now, map[string]any{"scope": "openid"})), 403, CodeInsufficientScope},
		{"revoked API key", bearer(revoked), 401, CodeInvalidToken},
		{"expired API key", bearer(expiredKey), 401, CodeInvalidToken},
		{"forged API key", bearer(revoked[:len(revoked)-4] + "AAAA"), 401, CodeInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, fails := f.up.hits.Load(), len(f.fails)
			w := f.do("/mcp/docs", tt.hdr...)
			if w.Code != tt.status {
				t.Errorf("got %d %s, want %d", w.Code, w.Body, tt.status)
			}
			if f.up.hits.Load() != before {
				t.Error("the request reached the handler behind the middleware")
			}
			ch := w.Header().Get("WWW-Authenticate")
			if want := `Bearer resource_metadata="https://sluice.example/.well-known/oauth-protected-resource/mcp/docs"`; !strings.HasPrefix(ch, want) {
				t.Errorf("got WWW-Authenticate %q, want it to start with %q", ch, want)
			}
			if tt.code != "" && !strings.Contains(ch, `error="`+tt.code+`"`) {
				t.Errorf("got WWW-Authenticate %q, want error=%q", ch, tt.code)
			}
			if tt.code == CodeInsufficientScope && !strings.Contains(ch, `scope="mcp:tools"`) {
				t.Errorf("got WWW-Authenticate %q, want scope=\"mcp:tools\"", ch)
			}
			var body struct {
				JSONRPC string `json:"jsonrpc"`
				Error   struct {
					Code    int               `json:"code"`
					Message string            `json:"message"`
					Data    map[string]string `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.JSONRPC != "2.0" || body.Error.Code != intercept.CodeInvalidRequest {
				t.Errorf("got body %s, want a JSON-RPC error", w.Body)
			}
			// The body's error code is the challenge's: none without
			// credentials (it said "error":"").
			if got, ok := body.Error.Data["error"]; got != tt.code || ok != (tt.code != "") {
				t.Errorf("got body %s, want data.error %q", w.Body, tt.code)
			}
			if testing.Verbose() && len(f.fails) > fails {
				t.Logf("%v (%v)", f.fails[len(f.fails)-1], f.fails[len(f.fails)-1].Err)
			}
			if len(f.fails) != fails+1 {
				t.Errorf("got %d failure reports, want 1", len(f.fails)-fails)
			}
		})
	}
}

// rotateless returns a fresh signing key the IdP does not publish.
func (p *testIdP) rotateless(t *testing.T) any {
	k := newIdP(t).current()
	return k.Key
}

// A good token or key authenticates: the principal reaches the handler,
// the Authorization header does not.
func TestGoodCredentials(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.JWT.AgentClaim = "azp" })
	now := f.clock.Now()
	key, _, err := CreateKey(f.keys, "reporter", 0, now)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	for _, tt := range []struct {
		name, tok, id, method string
	}{
		{"jwt", sign(t, f.idp.current(), f.clock.Now(), map[string]any{"azp": "billing-agent"}), "billing-agent", ModeJWT},
		{"api key", key, "reporter", ModeAPIKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do("/sse/docs/message?sessionId=x", "Authorization", "Bearer "+tt.tok)
			if w.Code != http.StatusOK {
				t.Fatalf("got %d %s, want 200", w.Code, w.Body)
			}
			p := f.up.last.Load()
			if p == nil || p.ID != tt.id || p.Method != tt.method {
				t.Fatalf("got principal %+v, want %s by %s", p, tt.id, tt.method)
			}
			if got := f.up.auth.Load(); got != "" {
				t.Errorf("the handler saw Authorization %q, want none", got)
			}
		})
	}
	if p := f.up.last.Load(); p.Claims["key_id"] == "" {
		t.Errorf("got claims %v, want key_id", p.Claims)
	}
}

// Protected resource metadata (RFC 9728) names the resource and the
// authorization server, without credentials.
func TestResourceMetadata(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.AuthorizationServers = []string{"https://idp.example/realms/agents"} })
	r := httptest.NewRequest(http.MethodGet, "http://sluice.example/.well-known/oauth-protected-resource/mcp/docs", nil)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("got %d, want 200", w.Code)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		Scopes               []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &md); err != nil {
		t.Fatal(err)
	}
	if md.Resource != "https://sluice.example/mcp/docs" || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != "https://idp.example/realms/agents" || len(md.Scopes) != 1 {
		t.Errorf("got %+v", md)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/etc/passwd", "/.well-known/oauth-protected-resource/mcp/../x"} {
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://sluice.example"+p, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("%s: got %d, want 404", p, w.Code)
		}
	}
	if f.up.hits.Load() != 0 {
		t.Error("metadata requests reached the handler")
	}
}

// TestReadyzProbeStatusOnly: a readiness probe without credentials gets
// the status behind it and nothing of what its body says (which upstream
// is not reachable, at which address); with a JWT, the body; with a bad
// token, the status (a probe sending a stale one keeps working) and the
// failure told.
func TestReadyzProbeStatusOnly(t *testing.T) {
	f := newFixture(t, nil)
	detail := "github: dial tcp 10.0.3.7:8443: connect: connection refused\n"
	h := f.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, detail)
	}))
	get := func(hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://sluice.example/readyz", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(); w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "10.0.3.7") || strings.Contains(w.Body.String(), "github") {
		t.Errorf("probe without credentials: got %d %q; want 503 without the detail", w.Code, w.Body.String())
	}
	tok := sign(t, f.idp.current(), f.clock.Now(), nil)
	if w := get("Authorization", "Bearer "+tok); w.Code != http.StatusServiceUnavailable || w.Body.String() != detail {
		t.Errorf("with a JWT: got %d %q; want 503 %q", w.Code, w.Body.String(), detail)
	}
	if w := get("Authorization", "Bearer nonsense"); w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "10.0.3.7") || len(f.fails) != 1 {
		t.Errorf("with a bad token: got %d %q, %d failures told; want 503 without the detail, 1 failure", w.Code, w.Body.String(), len(f.fails))
	}
}

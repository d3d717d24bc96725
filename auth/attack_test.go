package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/url"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sluicehq/sluice/intercept"
)

// TestCacheKeyReplacedUnderSameKid: the IdP replaces the key
// material published under a kid (a compromised key re-issued under the
// same kid). A fresh verifier refuses a token signed by the old key; the
// verified-token cache must not keep accepting it just because a key of
// that kid is still published.
func TestCacheKeyReplacedUnderSameKid(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	old := idp.current()
	tok := sign(t, old, clock.Now(), nil)
	authOK(t, v, tok) // verified and remembered

	// New key material, same kid.
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idp.use(jose.JSONWebKey{Key: priv, KeyID: old.KeyID, Algorithm: "ES256", Use: "sig"})
	clock.Advance(time.Minute) // past jwks_min_refresh
	// Some unknown kid makes the verifier refetch the set.
	authFails(t, v, sign(t, jose.JSONWebKey{Key: priv, KeyID: "other", Algorithm: "ES256"}, clock.Now(), nil), "unknown kid")
	if n := idp.fetches.Load(); n != 2 {
		t.Fatalf("got %d fetches, want 2 (the set was refetched)", n)
	}
	// Control: a verifier without the cache refuses the token.
	fresh := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	authFails(t, fresh, tok, "fresh verifier, old key material")
	// The caching verifier must refuse it too.
	if p, err := v.Authenticate(context.Background(), tok); err == nil {
		t.Fatalf("cached token signed by key material no longer published was accepted as %q", p.ID)
	}
}

// TestMTLSCommonNameMimicsURI: with the default identity (URI SAN
// else CN) a certificate carrying no URI SAN and a common name spelled as
// another agent's SPIFFE ID becomes that agent.
func TestMTLSCommonNameMimicsURI(t *testing.T) {
	ca, sign := testCA(t)
	leaf := func(cn string, uris ...string) *x509.Certificate {
		return sign(func(tm *x509.Certificate) {
			tm.Subject = pkix.Name{CommonName: cn}
			for _, u := range uris {
				pu, _ := url.Parse(u)
				tm.URIs = append(tm.URIs, pu)
			}
		})
	}
	const alice = "spiffe://example.org/agent/alice"
	real, _ := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf("alice-workload", alice), ca}}}, "")
	if real == nil || real.ID != alice {
		t.Fatalf("alice's own certificate: %v", real)
	}
	fake, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(alice), ca}}}, "")
	if err == nil && fake != nil && fake.ID == alice {
		t.Fatalf("a certificate with only CN %q (no URI SAN) authenticated as the agent %q whose identity is a URI SAN", alice, fake.ID)
	}
}

// TestJWTAgentNameNotChecked: an API key's agent must match
// ^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$; a JWT's agent claim is taken as
// is, so a token whose sub (or agent_claim: preferred_username, a DCR
// client_name, …) is a Cyrillic look-alike of "alice", or carries
// invisible or control characters, names an agent that audit, console
// and manifests cannot tell from alice.
func TestJWTAgentNameNotChecked(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	for _, sub := range []string{"\u0430lice", "alice\u200b", "alice\n", ""} {
		p, err := v.Authenticate(context.Background(), sign(t, idp.current(), clock.Now(), map[string]any{"sub": sub}))
		if err == nil {
			t.Errorf("sub %q authenticated as agent %q; an API key could not name this agent", sub, p.ID)
		}
	}
}

// TestMTLSAgentNameNotChecked: a JWT's agent claim must be printable
// ASCII (TestJWTAgentNameNotChecked); a client certificate's common name
// was taken as is. A CA that signs the common name a CSR asks for (as
// most do for client certificates) made "\u0430lice" (Cyrillic а), "alice"
// with a zero-width space or a newline an agent that logs, the console
// and manifests cannot tell from alice, with route memory, rate-limit
// buckets and approvals of its own.
func TestMTLSAgentNameNotChecked(t *testing.T) {
	ca, sign := testCA(t)
	leaf := func(cn string) *x509.Certificate {
		return sign(func(tm *x509.Certificate) { tm.Subject = pkix.Name{CommonName: cn} })
	}
	for _, identity := range []string{"", "cn"} {
		if p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf("alice"), ca}}}, identity); err != nil || p.ID != "alice" {
			t.Fatalf("identity %q, CN alice: got %v, %v, want agent alice", identity, p, err)
		}
		for _, cn := range []string{"\u0430lice", "alice\u200b", "alice\n", " alice", "\uff41lice"} {
			p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(cn), ca}}}, identity)
			if err == nil {
				t.Errorf("identity %q: CN %q authenticated as agent %q; a JWT could not name this agent", identity, cn, p.ID)
			}
		}
	}
}

// TestTokenRouteBinding: an audience naming one route's protected
// resource admits its token on that route's transports only; one naming
// no route admits it everywhere; spellings of the path the gateway's mux
// would route elsewhere do not carry a token there.
func TestTokenRouteBinding(t *testing.T) {
	const base = "https://sluice.example.com"
	v := NewJWTVerifier(JWTConfig{Audience: []string{base + "/mcp/demo", base + "/mcp/all/", base + "/mcp", "sluice",
		"https://example.com/sluice/mcp/demo", "https://example.com/sluice/", base + "/a2a/research", base + "/a2a/"}}, nil, nil)
	for _, tc := range []struct {
		aud    any
		method string
		path   string
		want   bool
	}{
		{base + "/mcp/demo", "POST", "/mcp/demo", true},
		{base + "/mcp/demo", "GET", "/sse/demo", true},
		{base + "/mcp/demo", "POST", "/sse/demo/message", true},
		{base + "/mcp/demo", "GET", "/ws/demo", true},
		{base + "/mcp/demo", "POST", "/mcp/all", false},
		{base + "/mcp/demo", "POST", "/mcp/demox", false},
		{base + "/mcp/demo", "POST", "/mcp", false},
		{base + "/mcp/demo", "POST", "/sse/message", false},
		{base + "/mcp/demo", "POST", "/a2a/research", false},
		{base + "/mcp/demo", "POST", "/mcp/dem%6F", true}, // the mux's name is demo too
		{base + "/mcp/demo", "POST", "/mcp/demo%2F..%2Fall", false},
		{base + "/mcp/all/", "POST", "/mcp/all", true},
		{base + "/mcp/other", "POST", "/mcp/other", false},                 // not a configured audience
		{"https://example.com/sluice/mcp/demo", "POST", "/mcp/demo", true}, // behind a proxy's path prefix
		{"https://example.com/sluice/mcp/demo", "POST", "/mcp/all", false},
		{"https://example.com/sluice/", "POST", "/mcp/all", true},
		{base + "/mcp", "POST", "/mcp/all", true},
		{"sluice", "POST", "/a2a/research", true},
		{[]any{base + "/mcp/demo", base + "/mcp/all/"}, "POST", "/mcp/all", true},
		{[]any{base + "/mcp/demo", 7}, "POST", "/mcp/all", false},
		{nil, "POST", "/mcp/demo", false},
		// An A2A agent's URL binds its token to that agent (attacker
		// review: it named no route and opened every MCP route).
		{base + "/a2a/research", "POST", "/a2a/research", true},
		{base + "/a2a/research", "POST", "/a2a/res%65arch", true},
		{base + "/a2a/research", "POST", "/a2a/research/rest/message:send", true},
		{base + "/a2a/research", "GET", "/a2a/research/.well-known/agent-card.json", true},
		{base + "/a2a/research", "POST", "/mcp/research", false},
		{base + "/a2a/research", "POST", "/mcp/demo", false},
		{base + "/a2a/research", "POST", "/mcp", false},
		{base + "/a2a/research", "POST", "/a2a/other", false},
		{base + "/a2a/research", "GET", "/a2a/.well-known/jwks.json", false},
		{base + "/mcp/demo", "POST", "/a2a/demo", false},
		{base + "/a2a/", "POST", "/mcp/demo", true}, // …/a2a names no agent: the gateway
	} {
		r, _ := http.NewRequest(tc.method, "https://sluice.example.com"+tc.path, nil)
		p := &intercept.Principal{ID: "a", Claims: map[string]any{"aud": tc.aud}}
		if got := v.forRoute(p, requestRoute(r)); got != tc.want {
			t.Errorf("aud %v on %s %s: got %v, want %v", tc.aud, tc.method, tc.path, got, tc.want)
		}
	}
}

// testCA makes a CA for client certificates and returns it with sign,
// which signs a client-auth certificate (a fresh key, valid for the hour
// around now) from the template edit leaves.
func testCA(t *testing.T) (*x509.Certificate, func(edit func(*x509.Certificate)) *x509.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	return ca, func(edit func(*x509.Certificate)) *x509.Certificate {
		t.Helper()
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tm := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "workload"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		edit(tm)
		der, err := x509.CreateCertificate(rand.Reader, tm, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

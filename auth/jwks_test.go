package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func authOK(t *testing.T, v *JWTVerifier, tok string) {
	t.Helper()
	if p, err := v.Authenticate(context.Background(), tok); err != nil || p.ID != "alice" {
		t.Fatalf("got %v, %v; want alice", p, err)
	}
}

func authFails(t *testing.T, v *JWTVerifier, tok, why string) {
	t.Helper()
	var f *Failure
	if _, err := v.Authenticate(context.Background(), tok); !errors.As(err, &f) || f.Code != CodeInvalidToken {
		t.Fatalf("%s: got %v, want invalid_token", why, err)
	}
}

// The IdP rotates its key: a token under the new kid makes the gateway
// refetch; the old key, gone from the set, stops working at once.
// Unknown kids refetch at most once per jwks_min_refresh however many
// arrive. When the JWKS goes down or answers garbage, keys fetched before
// keep working until jwks_cache_ttl, then everything fails closed until
// the JWKS is back.
func TestJWKSRotationAndOutage(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	k1 := idp.current()
	authOK(t, v, sign(t, k1, clock.Now(), nil))
	if n := idp.fetches.Load(); n != 1 {
		t.Fatalf("got %d fetches, want 1", n)
	}

	clock.Advance(time.Minute) // past jwks_min_refresh
	k2 := idp.rotate()
	authOK(t, v, sign(t, k2, clock.Now(), nil))
	if n := idp.fetches.Load(); n != 2 {
		t.Fatalf("after rotation: got %d fetches, want 2", n)
	}
	authFails(t, v, sign(t, k1, clock.Now(), nil), "the rotated-out key")

	// A flood of unknown kids: no fetch within jwks_min_refresh.
	for i := range 200 {
		k := jose.JSONWebKey{Key: k2.Key, KeyID: "flood" + string(rune('a'+i%26)), Algorithm: "ES256"}
		authFails(t, v, sign(t, k, clock.Now(), nil), "unknown kid")
	}
	if n := idp.fetches.Load(); n != 2 {
		t.Fatalf("unknown-kid flood: got %d fetches, want still 2", n)
	}
	authOK(t, v, sign(t, k2, clock.Now(), nil)) // the flood did not hurt known keys

	for _, outage := range []struct {
		name string
		set  func(bool)
	}{{"down", idp.down.Store}, {"garbage", idp.garbage.Store}} {
		t.Run(outage.name, func(t *testing.T) {
			outage.set(true)
			clock.Advance(time.Minute)
			// An unknown kid refetches, which fails; known keys stay.
			k := jose.JSONWebKey{Key: k2.Key, KeyID: "new", Algorithm: "ES256"}
			authFails(t, v, sign(t, k, clock.Now(), nil), "unknown kid during the outage")
			authOK(t, v, sign(t, k2, clock.Now(), nil))
			clock.Advance(time.Hour) // past jwks_cache_ttl
			authFails(t, v, sign(t, k2, clock.Now(), nil), "an expired key during the outage")
			outage.set(false)
			clock.Advance(time.Minute)
			authOK(t, v, sign(t, k2, clock.Now(), nil))
		})
	}
}

// TestJWKSStalled: a JWKS endpoint that accepts the fetch and then sends
// nothing more (the start of a set, then a stall) neither holds up tokens
// signed with a key the gateway holds, nor keeps a key valid past
// jwks_cache_ttl: a token whose kid makes the gateway refetch waits no
// longer than its request, a token whose key expired while the endpoint
// stalls is refused once its request ends, and once the endpoint answers
// again the keys are fetched anew.
func TestJWKSStalled(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	k1 := idp.current()
	authOK(t, v, sign(t, k1, clock.Now(), nil))
	release := idp.stall()
	clock.Advance(time.Minute) // past jwks_min_refresh

	ask := func(tok string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := v.Authenticate(ctx, tok)
		return time.Since(start), err
	}
	unknown := jose.JSONWebKey{Key: k1.Key, KeyID: "new", Algorithm: "ES256"}
	if took, err := ask(sign(t, unknown, clock.Now(), nil)); err == nil || took > 2*time.Second {
		t.Errorf("a token with an unknown kid, the JWKS stalled: got %v after %s, want refused when its request ends (300ms)", err, took.Round(time.Millisecond))
	}
	// The fetch is still under way: known keys do not wait for it.
	if took, err := ask(sign(t, k1, clock.Now(), nil)); err != nil || took > 100*time.Millisecond {
		t.Errorf("a token with a held key, the JWKS stalled: got %v after %s, want accepted at once", err, took.Round(time.Millisecond))
	}
	clock.Advance(time.Hour) // past jwks_cache_ttl
	if took, err := ask(sign(t, k1, clock.Now(), nil)); err == nil || took > 2*time.Second {
		t.Errorf("a token whose key expired, the JWKS stalled: got %v after %s, want refused when its request ends", err, took.Round(time.Millisecond))
	}
	release()
	clock.Advance(time.Minute)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := v.Authenticate(context.Background(), sign(t, k1, clock.Now(), nil)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the JWKS answers again: a token with its key still refused after 15s")
		}
	}
}

// A JWKS endpoint that is down from the start fails every token closed.
func TestJWKSDownAtStart(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	idp.down.Store(true)
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	if err := v.Warm(context.Background()); err == nil {
		t.Error("Warm: got nil, want an error")
	}
	authFails(t, v, sign(t, idp.current(), clock.Now(), nil), "JWKS down")
}

// A revoked key stops working in a running gateway within a second,
// without a restart.
func TestAPIKeyRevocationSeenLive(t *testing.T) {
	clock := newClock()
	path := t.TempDir() + "/agent_keys.json"
	ks, err := NewKeyStore(path, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tok, k, err := CreateKey(path, "reporter", 0, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(1100 * time.Millisecond)
	if p, err := ks.Authenticate(tok); err != nil || p.ID != "reporter" || p.Method != ModeAPIKey {
		t.Fatalf("got %+v, %v; want reporter by api_key", p, err)
	}
	if _, err := RevokeKey(path, k.ID, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := RevokeKey(path, k.ID, clock.Now()); err == nil {
		t.Error("revoking twice: got nil, want an error")
	}
	clock.Advance(1100 * time.Millisecond)
	if _, err := ks.Authenticate(tok); err == nil {
		t.Fatal("a revoked key still authenticates")
	}
	keys, err := ListKeys(path)
	if err != nil || len(keys) != 1 || keys[0].Status(clock.Now()) != "revoked" || keys[0].Hash == "" {
		t.Fatalf("got %+v, %v; want one revoked key", keys, err)
	}
}

// TestAPIKeyFileReadStalls: a key file whose read never ends (a hung
// disk or NFS mount; here a FIFO nobody writes, renamed over it) held the
// request that reread it for ever, and one more each second behind the
// store's lock, while every other request went on with the keys read
// before, revoked since or not. Now a request waits for the read at most
// keyFileWait, every key fails (closed) until a read ends, and then the
// file read decides again.
func TestAPIKeyFileReadStalls(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	path := dir + "/agent_keys.json"
	tok, _, err := CreateKey(path, "reporter", 0, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := NewKeyStore(path, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fifo := dir + "/stalled"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	// Let the stalled read end when the test does: a writer that closes
	// at once gives it an empty file.
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})

	clock.Advance(1100 * time.Millisecond)
	type result struct {
		took time.Duration
		err  error
	}
	res := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := ks.Authenticate(tok)
		res <- result{time.Since(start), err}
	}()
	const wait = 2 * time.Second // keyFileWait
	select {
	case r := <-res:
		if r.err == nil || r.took > wait+time.Second {
			t.Errorf("the key file's read stalled: got %v after %s, want the key refused within %s", r.err, r.took.Round(time.Millisecond), wait)
		}
	case <-time.After(wait + 3*time.Second):
		t.Fatalf("the key file's read stalled: the request still waits %s later", wait+3*time.Second)
	}
	clock.Advance(100 * time.Millisecond) // within the second: no read started
	if _, err := ks.Authenticate(tok); err == nil {
		t.Error("another request while the read stalls: accepted with the keys read before, want refused")
	}

	// The file is back: once its read ends, keys are decided by it again.
	tmp := dir + "/back"
	if err := os.WriteFile(tmp, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close() // ends the stalled read
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		clock.Advance(1100 * time.Millisecond)
		if _, err := ks.Authenticate(tok); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the key file readable again: the key still refused after 10s: %v", err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := JWTConfig{Issuer: testIssuer, Audience: []string{testAudience}, JWKSURL: "https://idp.example/certs"}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"none", Config{Mode: Modes{"none"}}, ""},
		{"jwt", Config{Mode: Modes{"jwt"}, JWT: ok}, ""},
		{"no mode", Config{}, "auth.mode"},
		{"unknown mode", Config{Mode: Modes{"oauth"}}, "auth.mode"},
		{"none and jwt", Config{Mode: Modes{"none", "jwt"}, JWT: ok}, "auth.mode"},
		{"no issuer", Config{Mode: Modes{"jwt"}, JWT: JWTConfig{Audience: ok.Audience, JWKSURL: ok.JWKSURL}}, "auth.jwt.issuer"},
		{"no audience", Config{Mode: Modes{"jwt"}, JWT: JWTConfig{Issuer: ok.Issuer, JWKSURL: ok.JWKSURL}}, "auth.jwt.audience"},
		{"http jwks", Config{Mode: Modes{"jwt"}, JWT: JWTConfig{Issuer: ok.Issuer, Audience: ok.Audience, JWKSURL: "http://idp.example/certs"}}, "auth.jwt.jwks_url"},
		{"alg none", Config{Mode: Modes{"jwt"}, JWT: JWTConfig{Issuer: ok.Issuer, Audience: ok.Audience, JWKSURL: ok.JWKSURL, Algorithms: []string{"none"}}}, "auth.jwt.algorithms[0]"},
		{"HS256", Config{Mode: Modes{"jwt"}, JWT: JWTConfig{Issuer: ok.Issuer, Audience: ok.Audience, JWKSURL: ok.JWKSURL, Algorithms: []string{"RS256", "HS256"}}}, "auth.jwt.algorithms[1]"},
		{"jwt without mode", Config{Mode: Modes{"api_key"}, JWT: ok}, "auth.jwt"},
		{"bad identity", Config{Mode: Modes{"mtls"}, MTLS: MTLSConfig{Identity: "email"}}, "auth.mtls.identity"},
		// A token named by a claim its holder may choose, beside
		// certificates that may be named by common name
		// (TestAttackJWTTakesCertificateAgentName).
		{"chosen claim beside common names", Config{Mode: Modes{"jwt", "mtls"}, JWT: withClaim(ok, "preferred_username")}, "auth.jwt.agent_claim"},
		{"chosen claim beside cn", Config{Mode: Modes{"mtls", "jwt"}, JWT: withClaim(ok, "azp"), MTLS: MTLSConfig{Identity: "cn"}}, "auth.jwt.agent_claim"},
		{"chosen claim beside URI SANs", Config{Mode: Modes{"jwt", "mtls"}, JWT: withClaim(ok, "preferred_username"), MTLS: MTLSConfig{Identity: "uri"}}, ""},
		{"chosen claim, shared names", Config{Mode: Modes{"jwt", "mtls"}, JWT: withClaim(ok, "preferred_username"), SharedAgentNames: true}, ""},
		{"sub beside common names", Config{Mode: Modes{"jwt", "mtls"}, JWT: withClaim(ok, "sub")}, ""},
		{"default claim beside common names", Config{Mode: Modes{"jwt", "mtls"}, JWT: ok}, ""},
		{"chosen claim without mtls", Config{Mode: Modes{"jwt", "api_key"}, JWT: withClaim(ok, "preferred_username")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func withClaim(j JWTConfig, claim string) JWTConfig {
	j.AgentClaim = claim
	return j
}

// A token verified before is remembered, but not past its exp, nor once
// its key has left the JWKS.
func TestVerifiedTokenCache(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	tok := sign(t, idp.current(), clock.Now(), map[string]any{"exp": clock.Now().Add(10 * time.Minute).Unix()})
	authOK(t, v, tok)
	authOK(t, v, tok)
	if v.verified.Len() != 1 {
		t.Fatalf("got %d remembered tokens, want 1", v.verified.Len())
	}
	clock.Advance(12 * time.Minute) // past exp and the 60s skew
	authFails(t, v, tok, "a remembered token past its exp")

	tok = sign(t, idp.current(), clock.Now(), nil)
	authOK(t, v, tok)
	idp.rotate()
	clock.Advance(time.Minute)
	authOK(t, v, sign(t, idp.current(), clock.Now(), nil)) // refetches: the old key is gone
	authFails(t, v, tok, "a remembered token whose key was rotated out")
}

// TestJWKSRedirectToPlainHTTP: jwks_url must be https ("keys fetched over
// plain http could be replaced in transit"), but a JWKS that answered
// with a redirect to http:// was followed, and keys whoever sat on that
// path served were taken: a token they signed named any agent. Now a
// redirect from https must stay on https.
func TestJWKSRedirectToPlainHTTP(t *testing.T) {
	clock := newClock()
	inTransit := newIdP(t) // what the plain-http leg serves: an attacker's key
	idp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inTransit.srv.URL+"/certs", http.StatusFound)
	}))
	defer idp.Close()
	cfg := inTransit.jwtConfig()
	cfg.JWKSURL = idp.URL + "/certs"
	if err := (&Config{Mode: Modes{ModeJWT}, JWT: cfg}).Validate(); err != nil {
		t.Fatal(err)
	}
	v := NewJWTVerifier(cfg, idp.Client(), clock.Now)
	authFails(t, v, sign(t, inTransit.current(), clock.Now(), nil), "a token signed with a key fetched over plain http after a redirect")
	if n := inTransit.fetches.Load(); n != 0 {
		t.Errorf("the plain-http target of the redirect was asked %d times, want 0", n)
	}

	// A redirect that stays on https is followed.
	good := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, idp.URL+"/elsewhere", http.StatusFound)
	}))
	defer good.Close()
	keys := newIdP(t)
	idp.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { keys.srv.Config.Handler.ServeHTTP(w, r) })
	cfg.JWKSURL = good.URL + "/certs"
	v = NewJWTVerifier(cfg, idp.Client(), clock.Now)
	authOK(t, v, sign(t, keys.current(), clock.Now(), nil))
}

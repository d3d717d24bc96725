package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// publish makes the IdP's set keys, in that order.
func (p *testIdP) publish(keys ...jose.JSONWebKey) {
	p.mu.Lock()
	p.keys = keys
	p.mu.Unlock()
}

func ecKey(t *testing.T, curve elliptic.Curve, kid, alg string) jose.JSONWebKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: alg, Use: "sig"}
}

// withoutKID is k, its token to carry no kid header, signed with ES256
// when k names no algorithm.
func withoutKID(k jose.JSONWebKey) jose.JSONWebKey {
	k.KeyID = ""
	if k.Algorithm == "" {
		k.Algorithm = "ES256"
	}
	return k
}

// TestJWKSManyKeysTokenWithoutKid: an IdP whose tokens carry no kid
// publishes two ES256 keys among thirty ES384 ones (half of them with no
// alg, told apart by their curve). A token signed by either ES256 key is
// accepted, every time: before, eight keys picked in random map order
// were tried, whatever their algorithm, and a valid token was refused
// three times in four.
func TestJWKSManyKeysTokenWithoutKid(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	var keys []jose.JSONWebKey
	for i := range 30 {
		alg := "ES384"
		if i%2 == 0 {
			alg = ""
		}
		keys = append(keys, ecKey(t, elliptic.P384(), fmt.Sprintf("p384-%d", i), alg))
	}
	a, b := ecKey(t, elliptic.P256(), "a", "ES256"), ecKey(t, elliptic.P256(), "b", "")
	keys = append(keys[:15], append([]jose.JSONWebKey{a}, append(keys[15:], b)...)...)
	idp.publish(keys...)
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	for i := range 10 {
		for _, k := range []jose.JSONWebKey{a, b} {
			tok := sign(t, withoutKID(k), clock.Now(), map[string]any{"jti": fmt.Sprint(i)})
			if p, err := v.Authenticate(context.Background(), tok); err != nil || p.ID != "alice" {
				t.Fatalf("token %d without kid, signed by key %q of the set: got %v, %v; want alice", i, k.KeyID, p, err)
			}
		}
	}
	// A key of the set for another algorithm does not verify an ES256
	// token, nor is it tried.
	if _, err := v.Authenticate(context.Background(), sign(t, withoutKID(ecKey(t, elliptic.P256(), "", "ES256")), clock.Now(), nil)); err == nil {
		t.Fatal("a token signed by a key not in the set was accepted")
	}
}

// TestJWKSTooManyKeysForTokenWithoutKid: with more keys for a token's
// algorithm than a token without kid is tried against (maxKeysTried), it
// is refused every time, before any signature check, with a reason
// naming kid for the operator: before, it was accepted or refused at
// random, after up to eight signature checks an unauthenticated caller
// could make the gateway do with every request.
func TestJWKSTooManyKeysForTokenWithoutKid(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	var keys []jose.JSONWebKey
	for i := range maxKeysTried + 1 {
		keys = append(keys, ecKey(t, elliptic.P256(), fmt.Sprintf("k%d", i), "ES256"))
	}
	idp.publish(keys...)
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	for i := range 10 {
		tok := sign(t, withoutKID(keys[i%len(keys)]), clock.Now(), nil)
		var f *Failure
		_, err := v.Authenticate(context.Background(), tok)
		if !errors.As(err, &f) || f.Code != CodeInvalidToken || !strings.Contains(f.Desc, "kid") {
			t.Fatalf("token %d without kid, %d ES256 keys in the set: got %v, want invalid_token saying why (no kid)", i, len(keys), err)
		}
	}
	// With its kid, the same key's token is accepted.
	authOK(t, v, sign(t, keys[3], clock.Now(), nil))
}

// TestJWKSKeysWithoutKid: an IdP publishes three keys, none with a kid,
// and signs tokens without one. A token signed by any of them is
// accepted: before, the keys were held by kid and all but the last were
// lost. One whose key leaves the set is refused again.
func TestJWKSKeysWithoutKid(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	keys := []jose.JSONWebKey{ecKey(t, elliptic.P256(), "", "ES256"), ecKey(t, elliptic.P256(), "", ""), ecKey(t, elliptic.P384(), "", "ES384")}
	idp.publish(keys...)
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	toks := make([]string, len(keys))
	for i, k := range keys {
		toks[i] = sign(t, withoutKID(k), clock.Now(), nil)
		if p, err := v.Authenticate(context.Background(), toks[i]); err != nil || p.ID != "alice" {
			t.Fatalf("token signed by key %d of the set, none with a kid: got %v, %v; want alice", i, p, err)
		}
	}
	// The first key leaves the set, which a token with an unknown kid
	// has fetched again: its token, remembered as verified, is refused.
	idp.publish(keys[1:]...)
	clock.Advance(time.Minute) // past jwks_min_refresh
	authFails(t, v, sign(t, ecKey(t, elliptic.P256(), "other", "ES256"), clock.Now(), nil), "unknown kid")
	if n := idp.fetches.Load(); n != 2 {
		t.Fatalf("got %d fetches, want 2 (the set was refetched)", n)
	}
	authOK(t, v, toks[1])
	authFails(t, v, toks[0], "its key left the set")
	authOK(t, v, toks[2])
}

// TestJWKSRotatedKeyWithoutKid: an issuer that names no kid rotates to a
// new key. A token signed with it failed every check until the set held
// expired (jwks_cache_ttl), since only an unknown kid made the set be
// fetched again; now a token without a kid that no held key verifies has
// the set fetched again (at most once per jwks_min_refresh, as for an
// unknown kid) and is tried against the new keys.
func TestJWKSRotatedKeyWithoutKid(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	old, rotated := ecKey(t, elliptic.P256(), "", "ES256"), ecKey(t, elliptic.P256(), "", "ES256")
	idp.publish(old)
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	authOK(t, v, sign(t, withoutKID(old), clock.Now(), nil))
	idp.publish(rotated)
	clock.Advance(time.Minute) // past jwks_min_refresh
	authOK(t, v, sign(t, withoutKID(rotated), clock.Now(), nil))
	// A forged token without a kid has the set fetched again at most once
	// per jwks_min_refresh.
	fetches := idp.fetches.Load()
	forger := ecKey(t, elliptic.P256(), "", "ES256")
	for range 5 {
		authFails(t, v, sign(t, withoutKID(forger), clock.Now(), nil), "a key the issuer never published")
	}
	if n := idp.fetches.Load() - fetches; n > 1 {
		t.Errorf("5 forged tokens within jwks_min_refresh fetched the set %d times, want at most 1", n)
	}
}

// TestJWKSRotatedKeyWithoutKidConcurrent: an issuer naming no kid
// rotates its key, and two tokens signed with the new one come at once:
// alice's has the set fetched again, and bob's, looked up while that
// fetch is under way, fails against the old set held. Bob's token was
// refused ('bad signature'): the fetch it waited for had begun before
// it asked, and another was not allowed within jwks_min_refresh, so the
// keys it brought were never tried. A token is now tried again against
// a set that replaced the one it failed against.
func TestJWKSRotatedKeyWithoutKidConcurrent(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	old, rotated := ecKey(t, elliptic.P256(), "", "ES256"), ecKey(t, elliptic.P256(), "", "ES256")
	idp.publish(old)
	var hook atomic.Pointer[func()]
	now := func() time.Time {
		if h := hook.Swap(nil); h != nil {
			(*h)()
		}
		return clock.Now()
	}
	v := NewJWTVerifier(idp.jwtConfig(), nil, now)
	authOK(t, v, sign(t, withoutKID(old), clock.Now(), nil))
	idp.publish(rotated)
	clock.Advance(time.Minute) // past jwks_min_refresh
	alice := sign(t, withoutKID(rotated), clock.Now(), map[string]any{"jti": "alice"})
	bob := sign(t, withoutKID(rotated), clock.Now(), map[string]any{"jti": "bob"})

	gate := make(chan struct{})
	idp.gate.Store(&gate)
	done := make(chan error, 1)
	go func() {
		_, err := v.Authenticate(context.Background(), alice)
		done <- err
	}()
	for idp.fetches.Load() < 2 {
		runtime.Gosched() // alice's fetch reaches the IdP and waits there
	}
	clock.Advance(time.Second) // bob comes after alice's fetch began
	// The set is let go as bob looks it up (the first time his request
	// reads the clock): he holds the old one.
	release := func() { close(gate) }
	hook.Store(&release)
	if p, err := v.Authenticate(context.Background(), bob); err != nil || p.ID != "alice" {
		t.Errorf("a token signed with the rotated key, looked up while another's fetch of the new set was under way: got %v, %v; want it accepted", p, err)
	}
	if err := <-done; err != nil {
		t.Errorf("the token that had the set fetched: %v", err)
	}
	if n := idp.fetches.Load(); n != 2 {
		t.Errorf("got %d fetches, want 2", n)
	}
}

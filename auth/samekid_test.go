package auth

import (
	"crypto/elliptic"
	"testing"
	"time"
)

// TestJWKSKeyReplacedUnderSameKidRefetched: the IdP rotates to new key
// material under the kid it used before (some name their key "default",
// or by its purpose). A token signed with the new key was refused (bad
// signature) until the set held expired, jwks_cache_ttl (an hour by
// default), since only an unknown kid had the set fetched again: every
// agent locked out for that long. Now a token with a kid that no held key
// of that kid verifies has the set fetched again, at most once per
// jwks_min_refresh however many ask, as for an unknown kid.
func TestJWKSKeyReplacedUnderSameKidRefetched(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	old := idp.current()
	oldTok := sign(t, old, clock.Now(), nil)
	authOK(t, v, oldTok)

	renewed := ecKey(t, elliptic.P256(), old.KeyID, "ES256")
	idp.use(renewed)
	clock.Advance(time.Minute) // past jwks_min_refresh
	authOK(t, v, sign(t, renewed, clock.Now(), nil))
	// The old material left the set: its token, remembered as verified,
	// is refused.
	authFails(t, v, oldTok, "its key material was replaced under the same kid")

	// Forged tokens under the published kid fetch the set again at most
	// once per jwks_min_refresh.
	fetches := idp.fetches.Load()
	forger := ecKey(t, elliptic.P256(), old.KeyID, "ES256")
	for range 5 {
		authFails(t, v, sign(t, forger, clock.Now(), nil), "a key the issuer never published, under its kid")
	}
	if n := idp.fetches.Load() - fetches; n > 1 {
		t.Errorf("5 forged tokens under a published kid within jwks_min_refresh fetched the set %d times, want at most 1", n)
	}
	clock.Advance(time.Minute)
	authOK(t, v, sign(t, renewed, clock.Now(), map[string]any{"jti": "2"}))
}

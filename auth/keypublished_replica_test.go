package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sluicehq/sluice/intercept"
)

// TestKeyPublishedNewerThanReplicaSet (found by a review): replica B
// checks, from its reference alone, the signing key of a JWT replica A
// verified (another replica's A2A push relay). When the IdP published
// that key after B last fetched its key set, B's set, still fresh, does
// not hold it: B said "no longer published" without fetching again
// (within jwks_min_refresh of its last fetch, or at all when the kid was
// known with other material, until jwks_cache_ttl), and the relay was
// ended for good on the first push through B. A key B's set does not hold
// is withdrawn only if a set fetched since says so; until B may fetch
// again it cannot tell (intercept.ErrUncheckable: the push 503, the relay
// kept); once fetched, the key is published. A key the issuer did
// withdraw is still found so, by a fetch.
func TestKeyPublishedNewerThanReplicaSet(t *testing.T) {
	for _, c := range []struct {
		name   string
		rotate func(idp *testIdP) jose.JSONWebKey
	}{
		{"a new kid", func(idp *testIdP) jose.JSONWebKey { return idp.rotate() }},
		{"new material under the kid", func(idp *testIdP) jose.JSONWebKey {
			priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			k := jose.JSONWebKey{Key: priv, KeyID: idp.current().KeyID, Algorithm: "ES256", Use: "sig"}
			idp.use(k)
			return k
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			idp, clock := newIdP(t), newClock()
			a := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
			b := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
			exp := map[string]any{"exp": clock.Now().Add(24 * time.Hour).Unix()}
			if _, err := b.Authenticate(context.Background(), sign(t, idp.current(), clock.Now(), exp)); err != nil {
				t.Fatal(err) // B has fetched the set
			}
			clock.Advance(5 * time.Second)
			k := c.rotate(idp)
			p, err := a.Authenticate(context.Background(), sign(t, k, clock.Now(), exp))
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(5 * time.Second) // within jwks_min_refresh of B's fetch
			if err := b.KeyPublished(p.SigningKey); err != nil && !errors.Is(err, intercept.ErrUncheckable) {
				t.Errorf("B, its set older than the key: %v, want published or cannot tell now", err)
			}
			clock.Advance(time.Minute)
			if err := b.KeyPublished(p.SigningKey); err != nil {
				t.Errorf("B, free to fetch again: %v, want published", err)
			}
			// Withdrawn for real: once B's set is past jwks_cache_ttl (as
			// for the Principal's Check), a fetch says so.
			idp.rotate()
			clock.Advance(2 * time.Hour)
			if err := b.KeyPublished(p.SigningKey); err == nil || errors.Is(err, intercept.ErrUncheckable) || !strings.Contains(err.Error(), "no longer published") {
				t.Errorf("B, the key withdrawn: %v, want it no longer published", err)
			}
		})
	}
}

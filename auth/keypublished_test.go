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

// TestJWTKeyPublished: a JWT's Principal names its signing key
// (SigningKey), and KeyPublished answers, from that reference alone, what
// the Principal's Check answers of the key: published; withdrawn (the IdP
// rotated it out), or replaced by another key under the same kid, is no
// longer; a JWKS that cannot be fetched says nothing of it
// (intercept.ErrUncheckable), and neither does the Principal's Check,
// which before said the key was withdrawn and so ended, for good, what
// the credential held (an A2A push relay).
func TestJWTKeyPublished(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	k1 := idp.current()
	p, err := v.Authenticate(context.Background(), sign(t, k1, clock.Now(), map[string]any{"exp": clock.Now().Add(24 * time.Hour).Unix()}))
	if err != nil {
		t.Fatal(err)
	}
	ref := p.SigningKey
	if ref == "" || !strings.HasSuffix(ref, "."+k1.KeyID) {
		t.Fatalf("SigningKey = %q, want the key's digest and its kid %q", ref, k1.KeyID)
	}
	if err := v.KeyPublished(ref); err != nil {
		t.Errorf("a published key: %v", err)
	}

	// The JWKS down, the set held past jwks_cache_ttl: neither the
	// Principal nor its reference can tell.
	idp.down.Store(true)
	clock.Advance(2 * time.Hour)
	for name, err := range map[string]error{"Check": p.Check(), "KeyPublished": v.KeyPublished(ref)} {
		if !errors.Is(err, intercept.ErrUncheckable) {
			t.Errorf("%s with the JWKS down: %v, want an error wrapping ErrUncheckable", name, err)
		}
	}
	idp.down.Store(false)
	clock.Advance(time.Minute)
	if err := v.KeyPublished(ref); err != nil {
		t.Errorf("the JWKS back: %v", err)
	}

	// Withdrawn: the IdP publishes another key.
	idp.rotate()
	clock.Advance(2 * time.Hour)
	for name, err := range map[string]error{"Check": p.Check(), "KeyPublished": v.KeyPublished(ref)} {
		if err == nil || errors.Is(err, intercept.ErrUncheckable) || !strings.Contains(err.Error(), "no longer published") {
			t.Errorf("%s of a withdrawn key: %v, want it no longer published", name, err)
		}
	}

	// Another key under the same kid is not the key.
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp.use(jose.JSONWebKey{Key: priv, KeyID: k1.KeyID, Algorithm: "ES256", Use: "sig"})
	clock.Advance(2 * time.Hour)
	if err := v.KeyPublished(ref); err == nil || !strings.Contains(err.Error(), "no longer published") {
		t.Errorf("another key under the kid: %v, want it no longer published", err)
	}
	idp.use(k1)
	clock.Advance(2 * time.Hour)
	if err := v.KeyPublished(ref); err != nil {
		t.Errorf("the key published again: %v", err)
	}

	for _, bad := range []string{"", "no-dot", "." + k1.KeyID} {
		if err := v.KeyPublished(bad); err == nil {
			t.Errorf("KeyPublished(%q) = nil, want an error", bad)
		}
	}
	var none *Authenticator
	if err := none.JWTKeyPublished(ref); err == nil {
		t.Error("no authenticator: JWTKeyPublished = nil, want refused")
	}
}

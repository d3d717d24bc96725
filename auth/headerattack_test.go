package auth

import (
	"crypto/elliptic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestJWTHeaderAttacks: a token whose header brings its own key (jwk,
// jku, x5u) is checked against the issuer's set only, whatever it names;
// one marking a header critical that Sluice does not act on (crit) is
// refused, as RFC 7515 §4.1.11 requires, even when its signature holds.
func TestJWTHeaderAttacks(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	good := idp.current()
	forger := ecKey(t, elliptic.P256(), good.KeyID, "ES256")
	signWith := func(k jose.JSONWebKey, extra map[jose.HeaderKey]any) string {
		t.Helper()
		opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.KeyID)
		for h, val := range extra {
			opts = opts.WithHeader(h, val)
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.Key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		now := clock.Now()
		tok, err := jwt.Signed(s).Claims(map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "alice",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	pub := forger.Public()
	for name, tok := range map[string]string{
		"embedded jwk":            signWith(forger, map[jose.HeaderKey]any{"jwk": pub}),
		"jku to the forger's set": signWith(forger, map[jose.HeaderKey]any{"jku": "https://evil.example/jwks"}),
		"x5u":                     signWith(forger, map[jose.HeaderKey]any{"x5u": "https://evil.example/cert.pem"}),
		"crit, good signature":    signWith(good, map[jose.HeaderKey]any{"crit": []string{"exp"}, "exp": 1}),
	} {
		authFails(t, v, tok, name)
	}
	authOK(t, v, signWith(good, nil))
}

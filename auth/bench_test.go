package auth

import (
	"context"
	"testing"
)

// BenchmarkJWT is the cost of one JWT authentication with the key cached
// (ES256, the test IdP's key): "verify" checks the signature and claims
// every time, "remembered" is the usual case of an agent sending the same
// token again.
func BenchmarkJWT(b *testing.B) {
	idp, clock := newIdP(b), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	tok := sign(b, idp.current(), clock.Now(), nil)
	if _, err := v.Authenticate(context.Background(), tok); err != nil {
		b.Fatal(err)
	}
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.verify(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Authenticate(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAPIKey is the cost of one API key lookup among 1000 keys.
func BenchmarkAPIKey(b *testing.B) {
	clock := newClock()
	path := b.TempDir() + "/agent_keys.json"
	var tok string
	for i := range 1000 {
		t, _, err := CreateKey(path, "agent", 0, clock.Now())
		if err != nil {
			b.Fatal(err)
		}
		if i == 500 {
			tok = t
		}
	}
	ks, err := NewKeyStore(path, clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ks.Authenticate(tok); err != nil {
			b.Fatal(err)
		}
	}
}

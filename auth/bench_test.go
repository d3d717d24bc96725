package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
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

// BenchmarkJWTAlgorithms is the cost of verifying a first-seen token with
// the key cached, per algorithm: "verify" is what Authenticate does for a
// token it has not seen (parse, signature, claims), "signature" the bare
// signature check of the same token with crypto/*, the floor no JOSE
// library can go below.
func BenchmarkJWTAlgorithms(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []jose.JSONWebKey{
		{Key: rsaKey, KeyID: "rs", Algorithm: "RS256", Use: "sig"},
		{Key: rsaKey, KeyID: "ps", Algorithm: "PS256", Use: "sig"},
		{Key: ecKey, KeyID: "es", Algorithm: "ES256", Use: "sig"},
		{Key: edKey, KeyID: "ed", Algorithm: "EdDSA", Use: "sig"},
	} {
		b.Run(k.Algorithm, func(b *testing.B) {
			idp, clock := newIdP(b), newClock()
			idp.use(k)
			v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
			tok := sign(b, k, clock.Now(), nil)
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
			b.Run("signature", func(b *testing.B) {
				check := rawVerifier(b, k, tok)
				b.ReportAllocs()
				for b.Loop() {
					if !check() {
						b.Fatal("signature does not verify")
					}
				}
			})
		})
	}
}

// rawVerifier returns a check of tok's signature with crypto/* alone.
func rawVerifier(b *testing.B, k jose.JSONWebKey, tok string) func() bool {
	i := strings.LastIndexByte(tok, '.')
	input, sig := []byte(tok[:i]), tok[i+1:]
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		b.Fatal(err)
	}
	switch key := k.Key.(type) {
	case *rsa.PrivateKey:
		pub := &key.PublicKey
		if k.Algorithm == "PS256" {
			return func() bool {
				h := sha256.Sum256(input)
				return rsa.VerifyPSS(pub, crypto.SHA256, h[:], raw, nil) == nil
			}
		}
		return func() bool {
			h := sha256.Sum256(input)
			return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], raw) == nil
		}
	case *ecdsa.PrivateKey:
		pub := &key.PublicKey
		r, s := new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])
		return func() bool {
			h := sha256.Sum256(input)
			return ecdsa.Verify(pub, h[:], r, s)
		}
	case ed25519.PrivateKey:
		pub := key.Public().(ed25519.PublicKey)
		return func() bool { return ed25519.Verify(pub, input, raw) }
	}
	b.Fatalf("no raw verifier for %T", k.Key)
	return nil
}

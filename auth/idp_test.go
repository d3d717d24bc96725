package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testClock is a clock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock { return &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testIdP is an identity provider's JWKS endpoint whose keys rotate, go
// down, turn to garbage and stall on demand.
type testIdP struct {
	t       testing.TB
	srv     *httptest.Server
	fetches atomic.Int32
	down    atomic.Bool
	garbage atomic.Bool
	// stalled, while set, is closed to let the fetches it holds go: each
	// gets its headers and the start of a set, and then nothing.
	stalled atomic.Pointer[chan struct{}]
	// gate, while set, holds each fetch until it is closed, then serves
	// the set.
	gate atomic.Pointer[chan struct{}]

	mu   sync.Mutex
	keys []jose.JSONWebKey // private keys of the published set
	n    int
}

const (
	testIssuer   = "https://idp.example/realms/agents"
	testAudience = "https://sluice.example/mcp"
)

func newIdP(t testing.TB) *testIdP {
	p := &testIdP{t: t}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		switch {
		case p.down.Load():
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		case p.garbage.Load():
			w.Write([]byte(`{"keys": [{"kty": "RSA", "n": "!!"`))
			return
		}
		if release := p.stalled.Load(); release != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"keys": [`))
			w.(http.Flusher).Flush()
			select {
			case <-*release:
			case <-r.Context().Done():
			}
			return
		}
		if gate := p.gate.Load(); gate != nil {
			select {
			case <-*gate:
			case <-r.Context().Done():
			}
		}
		p.mu.Lock()
		var set jose.JSONWebKeySet
		for _, k := range p.keys {
			set.Keys = append(set.Keys, k.Public())
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(p.srv.Close)
	p.rotate()
	return p
}

// stall makes the JWKS stall until the test ends or the function it
// returns is called.
func (p *testIdP) stall() (release func()) {
	ch := make(chan struct{})
	p.stalled.Store(&ch)
	var once sync.Once
	release = func() {
		once.Do(func() {
			p.stalled.Store(nil)
			close(ch)
		})
	}
	p.t.Cleanup(release) // before the server's Close, which waits for its handlers
	return release
}

// rotate publishes a new key in place of the old ones and returns it.
func (p *testIdP) rotate() jose.JSONWebKey {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	k := jose.JSONWebKey{Key: priv, KeyID: fmt.Sprintf("k%d", p.n), Algorithm: "ES256", Use: "sig"}
	p.keys = []jose.JSONWebKey{k}
	return k
}

// use publishes k alone.
func (p *testIdP) use(k jose.JSONWebKey) {
	p.mu.Lock()
	p.keys = []jose.JSONWebKey{k}
	p.mu.Unlock()
}

func (p *testIdP) current() jose.JSONWebKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[0]
}

// sign returns a token signed with k carrying claims over a valid base
// (iss, aud, sub, exp an hour after now).
func sign(t testing.TB, k jose.JSONWebKey, now time.Time, claims map[string]any) string {
	base := map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "alice",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "openid mcp:tools"}
	for name, v := range claims {
		if v == nil {
			delete(base, name)
		} else {
			base[name] = v
		}
	}
	alg := jose.SignatureAlgorithm(k.Algorithm)
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if k.KeyID != "" {
		opts = opts.WithHeader("kid", k.KeyID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: k.Key.(crypto.Signer)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(base).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (p *testIdP) jwtConfig() JWTConfig {
	return JWTConfig{Issuer: testIssuer, Audience: []string{testAudience}, JWKSURL: p.srv.URL + "/certs",
		JWKSCacheTTL: time.Hour, JWKSMinRefresh: 30 * time.Second}
}

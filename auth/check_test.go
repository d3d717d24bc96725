package auth

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestKeyPrincipalCheck: the principal of an API key says, when asked
// later, that its key was revoked or expired (a long-lived connection
// asks before each message).
func TestKeyPrincipalCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	now := time.Now()
	clock := func() time.Time { return now }
	tok, k, err := CreateKey(path, "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewKeyStore(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	tok2, _, err := CreateKey(path, "bob", 10*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second) // past the once-a-second reread
	p, err := s.Authenticate(tok)
	if err != nil || p.Check == nil || p.Check() != nil {
		t.Fatalf("Authenticate: %v %+v", err, p)
	}
	p2, err := s.Authenticate(tok2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RevokeKey(path, k.ID, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("after revoking: %v, want revoked", err)
	}
	if err := p2.Check(); err != nil {
		t.Errorf("another key: %v", err)
	}
	now = now.Add(11 * time.Hour)
	if err := p2.Check(); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("after its expiry: %v, want expired", err)
	}
}

// TestJWTPrincipalCheckStaleSet: a JWT's principal asked later (a call
// held for approval, a long stream) after the key set went unfetched past
// jwks_cache_ttl — nobody else's token made it fetch again — fetches it
// again rather than call the key withdrawn: before, a quiet gateway
// refused an approved call, or cut a stream, as "no longer published"
// though the IdP still published it. A key gone from the set, or a set
// that cannot be fetched past the ttl, still fails.
func TestJWTPrincipalCheckStaleSet(t *testing.T) {
	idp, clock := newIdP(t), newClock()
	v := NewJWTVerifier(idp.jwtConfig(), nil, clock.Now)
	p, err := v.Authenticate(context.Background(), sign(t, idp.current(), clock.Now(), map[string]any{"exp": clock.Now().Add(10 * time.Hour).Unix()}))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(61 * time.Minute) // past jwks_cache_ttl
	if err := p.Check(); err != nil {
		t.Errorf("the set stale, its key still published: %v, want nil", err)
	}
	if n := idp.fetches.Load(); n != 2 {
		t.Errorf("got %d fetches, want 2 (the set fetched again)", n)
	}
	idp.down.Store(true)
	clock.Advance(61 * time.Minute)
	if err := p.Check(); err == nil {
		t.Error("the set stale and the JWKS down: got nil, want an error")
	}
	idp.down.Store(false)
	clock.Advance(2 * time.Minute) // past jwks_min_refresh
	idp.rotate()
	clock.Advance(61 * time.Minute)
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "no longer published") {
		t.Errorf("its key rotated out: %v, want no longer published", err)
	}
}

// TestKeyCheckUnreadableFile: while the key file cannot be read, a key's
// Check (and KeyHolds, which another replica's push relay asks) fails,
// closed, with an error wrapping intercept.ErrUncheckable: it cannot
// tell, which a caller may try again, unlike a revoked key.
func TestKeyCheckUnreadableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	now := time.Now()
	tok, k, err := CreateKey(path, "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewKeyStore(path, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Authenticate(tok)
	if err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{keys: s}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil { // read fails (EISDIR), even as root
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second) // past the once-a-second reread
	for name, err := range map[string]error{"Check": p.Check(), "KeyHolds": a.KeyHolds(k.ID)} {
		if !errors.Is(err, intercept.ErrUncheckable) {
			t.Errorf("%s with the key file unreadable: %v, want an error wrapping ErrUncheckable", name, err)
		}
	}
}

// TestKeyPrincipalCheckReplacedUnderSameID (left open by attack102): a
// key file edited to hold another secret, or another agent, under a
// key's id (by hand, restored from a backup, a rotation that kept the
// id) left the connections opened with the old secret open: their check
// asked only whether the id was still there, unrevoked. It asks whether
// the key is the one they authenticated with.
func TestKeyPrincipalCheckReplacedUnderSameID(t *testing.T) {
	for _, change := range []string{"sha256", "agent"} {
		t.Run(change, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.json")
			now := time.Now()
			tok, _, err := CreateKey(path, "alice", time.Hour, now)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewKeyStore(path, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Authenticate(tok)
			if err != nil || p.Check() != nil {
				t.Fatalf("Authenticate: %v %+v", err, p)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f keyFile
			if err := json.Unmarshal(b, &f); err != nil || len(f.Keys) != 1 {
				t.Fatalf("key file: %v %s", err, b)
			}
			if change == "sha256" {
				f.Keys[0].Hash = strings.Repeat("0", 64)
			} else {
				f.Keys[0].Agent = "mallory"
			}
			if b, err = json.Marshal(f); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			now = now.Add(2 * time.Second) // past the once-a-second reread
			if err := p.Check(); err == nil || !strings.Contains(err.Error(), "replaced") {
				t.Errorf("after the key file's %s under the key's id changed: %v, want the credential refused", change, err)
			}
		})
	}
}

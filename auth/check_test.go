package auth

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
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

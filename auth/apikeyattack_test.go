package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDuplicateKeyIDRevocation: a key file holding two entries with
// one id (two files merged, a restored backup, a colliding id). `sluice
// keys revoke ID` must leave no key with that id working.
func TestDuplicateKeyIDRevocation(t *testing.T) {
	clock := newClock()
	path := t.TempDir() + "/agent_keys.json"
	tokA, k, err := CreateKey(path, "reader", 0, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A second entry with the same id, another secret and another agent.
	secretB := strings.Repeat("B", keySecretLen)
	sum := sha256.Sum256([]byte(secretB))
	tokB := KeyPrefix + k.ID + "_" + secretB
	f, _ := readKeyFile(path)
	f.Keys = append(f.Keys, Key{ID: k.ID, Agent: "admin-bot", Hash: hex.EncodeToString(sum[:]), Created: clock.Now().UTC()})
	b, _ := json.Marshal(f)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := NewKeyStore(path, clock.Now)
	if err != nil {
		t.Logf("a key file with a duplicate id is refused: %v", err)
		return // refusing the file is a fine answer
	}
	if _, err := RevokeKey(path, k.ID, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	for name, tok := range map[string]string{"A": tokA, "B": tokB} {
		if p, err := ks.Authenticate(tok); err == nil {
			t.Errorf("after `keys revoke %s`, key %s still authenticates as %q", k.ID, name, p.ID)
		}
	}
	if _, err := RevokeKey(path, k.ID, clock.Now()); err == nil {
		return
	} else {
		t.Logf("and revoking again: %v", err)
	}
}

// TestKeyFileAgentNameChecked: `sluice keys create` refuses an agent
// name outside ^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$, but a key file
// written by hand (or restored, or merged) was taken as is: a key for
// "\u0430lice" (Cyrillic а) or "alice\n" authenticated as an agent logs
// and manifests cannot tell from alice. Such a key fails; the others
// keep working.
func TestKeyFileAgentNameChecked(t *testing.T) {
	clock := newClock()
	path := t.TempDir() + "/agent_keys.json"
	good, _, err := CreateKey(path, "alice", 0, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, _ := readKeyFile(path)
	var bad []string
	for i, agent := range []string{"\u0430lice", "alice\n", "alice\u200b", ""} {
		secret := strings.Repeat(string(rune('A'+i)), keySecretLen)
		sum := sha256.Sum256([]byte(secret))
		id := strings.Repeat(string(rune('a'+i)), keyIDLen)
		f.Keys = append(f.Keys, Key{ID: id, Agent: agent, Hash: hex.EncodeToString(sum[:]), Created: clock.Now().UTC()})
		bad = append(bad, KeyPrefix+id+"_"+secret)
	}
	b, _ := json.Marshal(f)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := NewKeyStore(path, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range bad {
		if p, err := ks.Authenticate(tok); err == nil {
			t.Errorf("a key file entry for agent %q authenticated", p.ID)
		}
	}
	if p, err := ks.Authenticate(good); err != nil || p.ID != "alice" {
		t.Errorf("alice's key: got %v, %v, want alice", p, err)
	}
}

package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/auth"
)

// TestAttackPushRelayAcrossReplicasKeyTakesTokenAgent (attacker review):
// with api_key beside jwt, a key issued for the agent a token names ends
// the token's connections and push relays (auth.shared_agent_names off).
// Replica B, which holds only the relay's record, checked the token's exp
// and signing key: alice's push relay, registered through A with her
// token, went on delivering through B after a key was issued for alice.
func TestAttackPushRelayAcrossReplicasKeyTakesTokenAgent(t *testing.T) {
	as := newTestAS(t, nil)
	keys := filepath.Join(t.TempDir(), "agent_keys.json")
	e := newRelayReplicas(t, fmt.Sprintf("auth: {mode: [jwt, api_key], api_keys: {file: %s}, jwt: {issuer: %s, audience: [sluice-a2a], jwks_url: %s/jwks}}\n",
		keys, as.srv.URL, as.srv.URL))
	token := as.sign(map[string]any{"sub": "alice", "aud": "sluice-a2a"})
	if got := e.register(token, "one"); strings.Contains(got, `"error"`) {
		t.Fatalf("alice's message with a push config through A: %s", got)
	}
	if status := e.step("one", "PROGRESS-ONE"); status != http.StatusOK {
		t.Fatalf("the agent's push through B: HTTP %d, want 200", status)
	}
	e.delivered("PROGRESS-ONE")

	if _, _, err := auth.CreateKey(keys, "alice", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the key file's once-a-second reread
	if status := e.step("one", "AFTER-KEY"); status != http.StatusGone {
		t.Errorf("a push through B after a key was issued for alice: HTTP %d, want 410", status)
	}
	e.nothingDelivered("after a key was issued for alice")
}

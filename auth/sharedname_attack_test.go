package auth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAttackJWTTakesAPIKeyAgentName (attacker review): with jwt and
// api_key both configured, the agent is the name alone, so a token whose
// agent claim names an API key's agent became that agent: its manifest,
// route memory and approvals. Whoever can get such a token (an IdP user
// whose agent_claim is a name they chose, a client_id they registered)
// took over an agent the operator issued a key to. An API key's agent
// name now belongs to the API key method, revoked or expired keys too
// (their memory and approvals stay under the name), unless
// auth.shared_agent_names says the operator means one agent by both.
func TestAttackJWTTakesAPIKeyAgentName(t *testing.T) {
	for _, shared := range []bool{false, true} {
		f := newFixture(t, func(c *Config) {
			c.JWT.AgentClaim = "azp"
			c.SharedAgentNames = shared
		})
		key, k, err := CreateKey(f.keys, "deploy-bot", 0, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
		jwtAs := func(agent string) *httptest.ResponseRecorder {
			return f.do("/mcp", "Authorization", "Bearer "+sign(t, f.idp.current(), f.clock.Now(), map[string]any{"azp": agent, "scope": "mcp:tools"}))
		}
		if w := jwtAs("reporter"); w.Code != http.StatusOK {
			t.Fatalf("shared=%v: a token for another agent: got %d %s", shared, w.Code, w.Body)
		}
		if w := f.do("/mcp", "Authorization", "Bearer "+key); w.Code != http.StatusOK {
			t.Fatalf("shared=%v: the key itself: got %d %s", shared, w.Code, w.Body)
		}
		w := jwtAs("deploy-bot")
		if shared {
			if w.Code != http.StatusOK || f.up.last.Load().ID != "deploy-bot" || f.up.last.Load().Method != ModeJWT {
				t.Fatalf("shared_agent_names: a token for the key's agent: got %d %s", w.Code, w.Body)
			}
			continue
		}
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "API key") {
			t.Fatalf("a token whose agent claim names an API key's agent: got %d %s, want 401 saying the name is an API key's", w.Code, w.Body)
		}
		// Revoked, the key's agent still has its memory and approvals.
		if _, err := RevokeKey(f.keys, k.ID, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
		if w := jwtAs("deploy-bot"); w.Code != http.StatusUnauthorized {
			t.Fatalf("after the key is revoked: got %d %s, want 401", w.Code, w.Body)
		}
	}
}

// TestAttackJWTConnectionOutlivesNewKeyName: a connection authenticated
// by token (a /ws or /sse session) is checked before each message; a key
// issued later for its agent's name ends it, as the token could not be
// used to open one any more.
func TestAttackJWTConnectionOutlivesNewKeyName(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.JWT.AgentClaim = "azp" })
	tok := sign(t, f.idp.current(), f.clock.Now(), map[string]any{"azp": "deploy-bot", "scope": "mcp:tools"})
	if w := f.do("/mcp", "Authorization", "Bearer "+tok); w.Code != http.StatusOK {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	p := f.up.last.Load()
	if p.Check == nil || p.Check() != nil {
		t.Fatal("a fresh token has no check, or it fails")
	}
	if _, _, err := CreateKey(f.keys, "deploy-bot", 0, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("after a key is issued for the name: check says %v", err)
	}
}

// TestAttackCertTakesAPIKeyAgentName: the same for a client certificate
// whose common name names an API key's agent.
func TestAttackCertTakesAPIKeyAgentName(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Mode, c.JWT = Modes{ModeMTLS, ModeAPIKey}, JWTConfig{} })
	ca, signCert := testCA(t)
	if _, _, err := CreateKey(f.keys, "workload", 0, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	r := httptest.NewRequest(http.MethodPost, "http://sluice.example/mcp", strings.NewReader(`{}`))
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{signCert(func(*x509.Certificate) {}), ca}}}
	if p, err := f.a.Authenticate(r); err == nil {
		t.Fatalf("a certificate naming an API key's agent authenticated as %q", p.ID)
	} else if !strings.Contains(err.Error(), "API key") {
		t.Fatalf("refused, but not saying why: %v", err)
	}
}

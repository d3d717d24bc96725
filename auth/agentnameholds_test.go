package auth

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestAgentNameHolds: what another replica's push relay asks of a token's
// or certificate's agent name (AgentNameHolds) is what the Principal's
// Check asks: refused once a key is issued for the name, unless
// shared_agent_names; every name holds without api_key.
func TestAgentNameHolds(t *testing.T) {
	if err := (*Authenticator)(nil).AgentNameHolds("deploy-bot"); err != nil {
		t.Errorf("no auth: %v", err)
	}
	jwtOnly := newFixture(t, func(c *Config) { c.Mode = Modes{ModeJWT} })
	if err := jwtOnly.a.AgentNameHolds("deploy-bot"); err != nil {
		t.Errorf("jwt alone: %v", err)
	}
	for _, shared := range []bool{false, true} {
		f := newFixture(t, func(c *Config) { c.SharedAgentNames = shared })
		if err := f.a.AgentNameHolds("deploy-bot"); err != nil {
			t.Fatalf("shared=%v, no key for the name: %v", shared, err)
		}
		if _, _, err := CreateKey(f.keys, "deploy-bot", 0, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
		err := f.a.AgentNameHolds("deploy-bot")
		if shared && err != nil {
			t.Errorf("shared_agent_names, a key for the name: %v", err)
		}
		if !shared && (err == nil || !strings.Contains(err.Error(), "API key")) {
			t.Errorf("a key for the name: %v, want it an API key's", err)
		}
		if err := f.a.AgentNameHolds("reporter"); err != nil {
			t.Errorf("shared=%v, another name: %v", shared, err)
		}
	}
}

// TestTokenKeyFileUnreadable: with api_key beside jwt, whether a token's
// agent is an API key's is read from the key file; while it cannot be
// read, every token is refused (401, saying the key file cannot be read)
// and a replica's AgentNameHolds cannot tell (ErrUncheckable), rather than
// letting a token act as a key's agent unchecked. shared_agent_names
// does not read the file for tokens.
func TestTokenKeyFileUnreadable(t *testing.T) {
	for _, shared := range []bool{false, true} {
		f := newFixture(t, func(c *Config) {
			c.JWT.AgentClaim = "azp"
			c.SharedAgentNames = shared
		})
		if _, _, err := CreateKey(f.keys, "deploy-bot", 0, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(f.keys); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(f.keys, 0o700); err != nil { // read fails (EISDIR), even as root
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
		w := f.do("/mcp", "Authorization", "Bearer "+sign(t, f.idp.current(), f.clock.Now(), map[string]any{"azp": "reporter", "scope": "mcp:tools"}))
		err := f.a.AgentNameHolds("reporter")
		if shared {
			if w.Code != http.StatusOK || err != nil {
				t.Errorf("shared_agent_names, the key file unreadable: a token got %d %s; AgentNameHolds %v", w.Code, w.Body, err)
			}
			continue
		}
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "key file cannot be read") {
			t.Errorf("the key file unreadable: a token got %d %s, want 401 saying the key file cannot be read", w.Code, w.Body)
		}
		if !errors.Is(err, intercept.ErrUncheckable) {
			t.Errorf("the key file unreadable: AgentNameHolds %v, want an error wrapping ErrUncheckable", err)
		}
	}
}

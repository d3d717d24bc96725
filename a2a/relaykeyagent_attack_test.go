package a2a

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAttackPushRelayTokenAgentOutlivesKeyElsewhere (attacker review):
// with api_key beside jwt, a key issued for the agent a token names ends
// that token's connections (its Principal's Check: auth.shared_agent_names
// off), and so its push relays on the replica that registered them. A
// replica that took the relay from the shared store checked only the
// token's exp and signing key: the relay of a token that may no longer
// act as its agent went on delivering through it. It now asks the name
// too (Options.RecheckAgent), and ends the relay everywhere.
func TestAttackPushRelayTokenAgentOutlivesKeyElsewhere(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, _, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	a.mu.Lock()
	a.jwt = true
	a.mu.Unlock()
	task, url, token := relayOf(t, a, rec, "deploy-bot", hook.srv.URL+"/hook")
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	wantPush(t, onB, token, task, http.StatusOK, "through b, before any key names the agent")
	if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "deploy-bot-hook||") {
		t.Fatalf("the webhook got %q", got)
	}

	// The key file unreadable, b cannot tell: not delivered, kept.
	a.mu.Lock()
	a.unreadable = true
	a.mu.Unlock()
	wantPush(t, onB, token, task, http.StatusServiceUnavailable, "through b, the key file unreadable")
	a.mu.Lock()
	a.unreadable = false
	a.keyAgents["deploy-bot"] = true // sluice keys create deploy-bot
	a.mu.Unlock()
	wantPush(t, onB, token, task, http.StatusGone, "through b, once an API key is issued for the token's agent")
	if !b.heard(`deploy-bot: the caller's credential no longer holds: agent "deploy-bot" is an API key's`) {
		t.Errorf("b heard %q; want the name taken by a key", b.refused)
	}
	wantPush(t, url, token, task, http.StatusNotFound, "through a, after b ended the relay")
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("the webhook got %.200s", got)
	}
}

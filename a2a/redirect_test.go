package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAgentRedirectNotFollowed: an agent that answers a message with a
// redirect does not make the gateway send the message (and the operator's
// headers for that agent) somewhere else: the message was decided about
// for the configured agent.
func TestAgentRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t9","contextId":"c9","status":{"state":"completed"}}}`)
	}))
	defer other.Close()
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", agent.URL))
			return
		}
		http.Redirect(w, r, other.URL+"/rpc", http.StatusTemporaryRedirect)
	}))
	defer agent.Close()
	gw := serve(t, allow, agent.URL, Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	status, got := post(t, gw.URL+"/a2a/stub", "", body)
	if n := elsewhere.Load(); n != 0 || strings.Contains(got, "t9") {
		t.Fatalf("the message was sent to the redirect's target (%d requests there): %d %s", n, status, got)
	}
	if !strings.Contains(got, `"error"`) {
		t.Errorf("got %d %s, want a JSON-RPC error", status, got)
	}
	t.Logf("agent answered with a redirect; the client got %d %s", status, got)
}

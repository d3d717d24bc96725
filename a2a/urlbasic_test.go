package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestAgentURLCredentialsSentToEndpoint: an agent's url with userinfo
// (https://svc:PASS@agent) is sent as Basic authorization, as the README
// says, on the card's fetch and on every call to the interface the card
// names at the same origin. Before, only the card's fetch had it, so an
// agent requiring it answered every message/send 401.
func TestAgentURLCredentialsSentToEndpoint(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+user+":"+pass)
		mu.Unlock()
		if !ok || user != "svc" || pass != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="agent"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`)
	}))
	t.Cleanup(srv.Close)
	gw := serve(t, allow, strings.Replace(srv.URL, "http://", "http://svc:s3cret@", 1), Options{})
	send := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); !strings.Contains(got, "completed") {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("message/send: got %s, want the agent's completed task (the agent saw %q)", got, seen)
	}

	// A call the endpoint drops: its error names neither the user nor the
	// password now carried to the endpoint.
	var drop *httptest.Server
	drop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", drop.URL))
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	gw = serve(t, allow, strings.Replace(drop.URL, "http://", "http://svcuser:s3cret@", 1), Options{})
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); strings.Contains(got, "s3cret") || strings.Contains(got, "svcuser") || !strings.Contains(got, "error") {
		t.Errorf("a dropped call: got %s, want an error naming no credential", got)
	}

	// Credentials the agent refuses: the client is told the status and
	// where the gateway's credentials for the agent are set.
	gw = serve(t, allow, strings.Replace(srv.URL, "http://", "http://svc:wrong@", 1), Options{})
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); !strings.Contains(got, "HTTP 401") || strings.Contains(got, "wrong") {
		t.Errorf("refused credentials: got %s, want an error naming HTTP 401 and no credential", got)
	}

	// An agent whose card is public and whose endpoint refuses the call.
	var refusing *httptest.Server
	refusing = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", refusing.URL))
			return
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	gw = serve(t, allow, refusing.URL, Options{})
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); !strings.Contains(got, "answered HTTP 401 Unauthorized") {
		t.Errorf("a call refused 401: got %s, want an error naming HTTP 401", got)
	}
}

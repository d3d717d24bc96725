package a2a

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRevokedAgentStreamsOn: an agent whose credential stopped
// holding (an API key revoked, a token expired) while its message/stream
// was open went on reading every event the A2A
// agent sent — the task's updates and artifacts — for as long as the
// stream lasted: the credential was checked when the request came, and an
// MCP stream is cut at its next message (the gateway package's
// TestAttackRevokedPrincipalStreamsOn) but an A2A one was not. Now the
// first event after the credential stops holding is replaced by an error
// saying why, and the stream ends.
func TestAttackRevokedAgentStreamsOn(t *testing.T) {
	for _, c := range []struct{ name, version, method string }{
		{"v0.3", "", "message/stream"},
		{"v1.0", "1.0", "SendStreamingMessage"},
		{"v1.0 REST", "1.0", "message:stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := make(chan struct{})
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					fmt.Fprint(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 3 {
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"status-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"working\",\"message\":{\"kind\":\"message\",\"messageId\":\"m%d\",\"role\":\"agent\",\"parts\":[{\"kind\":\"text\",\"text\":\"SECRET-%d\"}]}}}}\n\n", i, i)
					w.(http.Flusher).Flush()
					select {
					case <-next:
					case <-r.Context().Done():
						return
					case <-time.After(10 * time.Second):
						return
					}
				}
			}))
			t.Cleanup(srv.Close)
			var revoked atomic.Bool
			req := revocableRequest(t, srv.URL, &revoked, c.method, c.version)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			event := func() string {
				var ev strings.Builder
				for {
					line, err := br.ReadString('\n')
					ev.WriteString(line)
					if err != nil || line == "\n" {
						return ev.String()
					}
				}
			}
			if got := event(); !strings.Contains(got, "SECRET-0") {
				t.Fatalf("first event: %q", got)
			}
			revoked.Store(true)
			next <- struct{}{}
			got := event()
			rest := event()
			if strings.Contains(got+rest, "SECRET-1") || strings.Contains(got+rest, "SECRET-2") {
				t.Errorf("after the credential stopped holding the stream went on: %.300q %.300q", got, rest)
			}
			if !strings.Contains(got, `"error"`) || !strings.Contains(got, "API key revoked") {
				t.Errorf("after the credential stopped holding: got %.300q, want an error saying why", got)
			}
			if rest != "" {
				t.Errorf("the stream did not end after the error: %.300q", rest)
			}
		})
	}
}

// revocableRequest serves agentURL (the stub agent) through a gateway whose
// requests carry alice's API key, revoked once revoked is set, and returns
// the request of method (message/send or /stream, SendMessage or
// SendStreamingMessage, or the REST binding's message:send or
// message:stream) in A2A version.
func revocableRequest(t *testing.T, agentURL string, revoked *atomic.Bool, method, version string) *http.Request {
	t.Helper()
	url := revocableGateway(t, agentURL, revoked, Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	switch {
	case strings.Contains(method, ":"):
		body, url = `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, url+"/rest/"+method
	case version == "1.0":
		body = `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	return req
}

// revocableGateway serves agentURL (as agent "stub") through a gateway
// with opts whose every request carries alice's API key, revoked once
// revoked is set, and returns the agent's URL there.
func revocableGateway(t *testing.T, agentURL string, revoked *atomic.Bool, opts Options) string {
	t.Helper()
	opts.Agents = []Agent{{Name: "stub", URL: agentURL}}
	g, err := New(opts, &intercept.Interceptor{Decider: allow})
	if err != nil {
		t.Fatal(err)
	}
	p := &intercept.Principal{ID: "alice", Method: "api_key", Check: func() error {
		if revoked.Load() {
			return errors.New("API key revoked")
		}
		return nil
	}}
	h := g.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(gw.Close)
	return gw.URL + "/a2a/stub"
}

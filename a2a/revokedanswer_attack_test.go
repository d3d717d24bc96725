package a2a

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAttackRevokedAgentAnswered: an agent whose credential stopped
// holding (an API key revoked) while a blocking message/send was with the
// A2A agent got the agent's answer — the task, its artifacts — when it
// came: the credential was checked when the request came, and a stream's
// later events are withheld (TestAttackRevokedAgentStreamsOn) but a single
// JSON answer was not. Now it is answered with an error saying why, and
// the task is not recorded as the revoked caller's.
func TestAttackRevokedAgentAnswered(t *testing.T) {
	for _, c := range []struct{ name, version, method string }{
		{"v0.3", "", "message/send"},
		{"v1.0", "1.0", "SendMessage"},
		{"v1.0 REST", "1.0", "message:send"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var revoked atomic.Bool
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					fmt.Fprint(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
					return
				}
				// The key is revoked while the agent works on the message.
				revoked.Store(true)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"SECRET"}]}]}}`)
			}))
			t.Cleanup(srv.Close)
			req := revocableRequest(t, srv.URL, &revoked, c.method, c.version)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if !revoked.Load() {
				t.Fatalf("the agent never got the message; answer %.300s", got)
			}
			if strings.Contains(string(got), "SECRET") || !strings.Contains(string(got), "API key revoked") {
				t.Errorf("answer after the credential stopped holding: %.300s; want an error saying why", got)
			}
		})
	}
}

package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackTaskReadNamedByHeader (attacker review): with authentication
// the principal is the agent, whatever the agent header says; a message
// to an agent was decided and recorded as its principal, but a task read
// later (tasks/get, tasks/resubscribe) took its agent from the header
// alone. mallory, authenticated, reading her own task with "X-Agent:
// alice" had its answer screened (classifier.scan_results: a
// sluice.injection_in_result event) as alice's, with no principal: the
// record named an agent that never made the call.
func TestAttackTaskReadNamedByHeader(t *testing.T) {
	task := `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed","message":{"kind":"message","messageId":"a","role":"agent","parts":[{"kind":"text","text":"done"}]}}}`
	agent := taskAgent(t, task)
	var mu sync.Mutex
	var seen []string // method agent principal
	ic := &intercept.Interceptor{Decider: allow, OnResult: func(d *intercept.ActionDescriptor, _ jsontext.Value) {
		p := "(none)"
		if d.Principal != nil {
			p = d.Principal.ID
		}
		mu.Lock()
		seen = append(seen, d.ToolName+" "+d.Agent+" "+p)
		mu.Unlock()
	}}
	g, err := New(Options{Agents: []Agent{{Name: "stub", URL: agent.URL}}, AgentHeader: "X-Agent"}, ic)
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As the auth middleware does for a request with mallory's key.
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), &intercept.Principal{ID: "mallory", Method: "api_key"})))
	}))
	t.Cleanup(gw.Close)
	send := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/a2a/stub", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Agent", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
	for _, method := range []string{"tasks/get", "tasks/resubscribe"} {
		if got := send(`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{"id":"t1"}}`); !strings.Contains(got, "done") {
			t.Fatalf("%s: %s", method, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"send mallory mallory", "tasks/get mallory mallory", "tasks/resubscribe mallory mallory"}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("results screened as %q, want %q: the principal is the agent, not the header", seen, want)
	}
}

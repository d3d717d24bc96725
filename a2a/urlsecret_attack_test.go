package a2a

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAgentURLCredentialsInErrors: an agent's url may carry the
// credentials the gateway sends it (https://svc:PASSWORD@agent/, which
// Go's client sends as Basic authorization, or a key in its path). When
// the agent's card could not be had (the agent down, answering 500 or
// 404), the error the calling client got named the card's URL whole, the
// password with it (Go's own errors star the password, not a path); and
// every decision's descriptor carried the URL whole as its target into
// policy, the classifier and the audit store, where an MCP upstream's
// target leaves them out.
func TestAttackAgentURLCredentialsInErrors(t *testing.T) {
	const secret = "s3cretAgentPass"
	send := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	for _, status := range []int{http.StatusInternalServerError, http.StatusNotFound} {
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", status)
		}))
		defer agent.Close()
		u := strings.Replace(agent.URL, "http://", "http://svc:"+secret+"@", 1)
		gw := serve(t, allow, u, Options{})
		_, got := post(t, gw.URL+"/a2a/stub", "", send)
		if !strings.Contains(got, "card") {
			t.Fatalf("status %d: got %s, want an error about the card", status, got)
		}
		if strings.Contains(got, secret) {
			t.Errorf("status %d: message/send: the agent URL's password reached the client: %s", status, got)
		}
		resp, err := http.Get(gw.URL + "/a2a/stub/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), secret) {
			t.Errorf("status %d: the card route: the agent URL's password reached the client: %s", status, b)
		}
	}

	// A key in the path, the agent down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/k/" + secret
	ln.Close() // nothing listens: the card's fetch is refused
	gw := serve(t, allow, down, Options{})
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); !strings.Contains(got, "card") || strings.Contains(got, secret) {
		t.Errorf("agent down: got %s, want an error about the card without the key in the URL's path", got)
	}

	// The target every decision is told of.
	agent, _ := stubAgent(t, goodCard)
	var targets []string
	var mu sync.Mutex
	seen := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		mu.Lock()
		targets = append(targets, d.TargetEndpoint)
		mu.Unlock()
		return intercept.Decision{Verdict: intercept.Allow, Reason: "ok", PublicReason: "ok"}, nil
	})
	gw = serve(t, seen, strings.Replace(agent.URL, "http://", "http://svc:"+secret+"@", 1)+"/?key="+secret, Options{})
	if _, got := post(t, gw.URL+"/a2a/stub", "", send); !strings.Contains(got, "completed") {
		t.Fatalf("message/send: got %s, want the agent's completed task", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(targets) == 0 {
		t.Fatal("nothing decided")
	}
	for _, tg := range targets {
		if strings.Contains(tg, secret) || !strings.HasPrefix(tg, agent.URL) {
			t.Errorf("a decision's target: got %q, want %s without userinfo or query", tg, agent.URL)
		}
	}
}

// TestAttackAgentEndpointInRelayError: the card a client reads points
// every interface at the gateway, but when the agent's own endpoint
// failed (the connection dropped), the error the client got quoted
// Go's url.Error: the endpoint the agent's card names, path and query
// whole, a key in it too.
func TestAttackAgentEndpointInRelayError(t *testing.T) {
	const secret = "cardQueryKey123"
	card := strings.ReplaceAll(goodCard, "BASE/rpc", "BASE/rpc?key="+secret)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(card, "BASE", srv.URL))
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the agent drops the call
		}
	}))
	defer srv.Close()
	gw := serve(t, allow, srv.URL, Options{})
	_, got := post(t, gw.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
	if !strings.Contains(got, "error") {
		t.Fatalf("got %s, want an error: the agent dropped the call", got)
	}
	if strings.Contains(got, secret) || strings.Contains(got, "/rpc") {
		t.Errorf("the agent's endpoint reached the client: %s", got)
	}
}

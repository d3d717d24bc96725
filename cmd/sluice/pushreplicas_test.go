package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/a2asrv/push"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestPushRelayAcrossReplicas: two sluice serve replicas on one real
// redis-server (agent_tasks.redis_url, session_keys), API keys, and
// a2a-go's server with its HTTP push sender as the agent. Alice registers
// a push config with her message through replica A; the agent's pushes
// reach the gateway through a load balancer that sends them to replica B.
// B delivers them to her webhook with her token; with Redis stopped B
// answers 503 and a registration through A is refused with a JSON-RPC
// error; with Redis back (empty) a new registration through A is
// delivered through B without either gateway restarting; once her key is
// revoked B answers 410 and delivers nothing. Before, B answered every
// push 404 (relays lived in A's memory).
func TestPushRelayAcrossReplicas(t *testing.T) {
	keyFile, key, _ := aliceAndMallory(t)
	e := newRelayReplicas(t, fmt.Sprintf("auth: {mode: api_key, api_keys: {file: %s}}\n", keyFile))
	call := func(base, body string) (int, string) { return callResearch(t, base, key, body) }
	register := func(text string) string { return e.register(key, text) }

	if got := register("one"); strings.Contains(got, `"error"`) {
		t.Fatalf("alice's message with a push config through A: %s", got)
	}
	if status := e.step("one", "PROGRESS-ONE"); status != http.StatusOK {
		t.Fatalf("the agent's push through B: HTTP %d, want 200", status)
	}
	e.delivered("PROGRESS-ONE")

	e.rs.Stop()
	if status := e.step("one", "WHILE-DOWN"); status != http.StatusServiceUnavailable {
		t.Errorf("a push through B with Redis stopped: HTTP %d, want 503", status)
	}
	if got := register("two"); !strings.Contains(got, `"error"`) || !strings.Contains(got, "shared store") {
		t.Errorf("a push config registered through A with Redis stopped: %s; want a JSON-RPC error naming the shared store", got)
	}
	if err := e.rs.Restart(); err != nil {
		t.Fatal(err)
	}
	// Redis came back empty: the relay registered before is gone; a new
	// one is delivered, neither gateway restarted.
	for deadline := time.Now().Add(10 * time.Second); ; {
		got := register("three")
		if !strings.Contains(got, `"error"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a push config through A after Redis came back: %s", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status := e.step("three", "PROGRESS-THREE"); status != http.StatusOK {
		t.Fatalf("the agent's push through B after Redis came back: HTTP %d, want 200", status)
	}
	e.delivered("PROGRESS-THREE")

	revokeFirstKey(t, keyFile)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if status, _ := call(e.baseB, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"x"}}`); status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's revoked key still admitted by B")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status := e.step("three", "AFTER-REVOCATION"); status != http.StatusGone {
		t.Errorf("a push through B after alice's key was revoked: HTTP %d, want 410", status)
	}
	e.nothingDelivered("after alice's key was revoked")
}

// TestPushRelayAcrossReplicasJWTKeyWithdrawn: as
// TestPushRelayAcrossReplicas with JWT authentication. Alice registers a
// push config through A with her token; the agent's pushes reach B, which
// holds only the relay's record, and are delivered; once the issuer
// withdraws the token's signing key (its JWKS no longer publishes it), B
// answers 410 and delivers nothing, though the token's exp is an hour
// away. Before, B checked only the exp: alice's webhook went on receiving
// the agent's pushes through every replica but A until then.
func TestPushRelayAcrossReplicasJWTKeyWithdrawn(t *testing.T) {
	as := newTestAS(t, nil)
	e := newRelayReplicas(t, fmt.Sprintf("auth: {mode: jwt, jwt: {issuer: %s, audience: [sluice-a2a], jwks_url: %s/jwks, jwks_cache_ttl: 1s, jwks_min_refresh: 100ms}}\n",
		as.srv.URL, as.srv.URL))
	token := as.sign(map[string]any{"sub": "alice", "aud": "sluice-a2a"})
	if got := e.register(token, "one"); strings.Contains(got, `"error"`) {
		t.Fatalf("alice's message with a push config through A: %s", got)
	}
	if status := e.step("one", "PROGRESS-ONE"); status != http.StatusOK {
		t.Fatalf("the agent's push through B: HTTP %d, want 200", status)
	}
	e.delivered("PROGRESS-ONE")

	as.withdrawn.Store(true)
	time.Sleep(1100 * time.Millisecond) // past jwks_cache_ttl: the keys B holds are stale, and are fetched again
	if status := e.step("one", "AFTER-WITHDRAWAL"); status != http.StatusGone {
		t.Errorf("a push through B after the token's signing key was withdrawn: HTTP %d, want 410", status)
	}
	e.nothingDelivered("after the token's signing key was withdrawn")
}

// relayReplicas is two sluice serve replicas, A and B, on one real
// redis-server (agent_tasks.redis_url, session_keys) with the auth config
// given, a2a-go's server with its HTTP push sender as the agent, whose
// pushes reach the gateway through a load balancer (public_url) that
// sends them all to B, and a webhook for the callers.
type relayReplicas struct {
	t            *testing.T
	rs           *redistest.Server
	baseA, baseB string
	steps        *scriptedSteps
	answered     chan relayAnswer // B's answers to the agent's pushes
	pushes       chan string      // what the webhook got
	hook         *httptest.Server
}

// relayAnswer is B's answer to a push, and the push.
type relayAnswer struct {
	body   string
	status int
}

func newRelayReplicas(t *testing.T, authCfg string) *relayReplicas {
	e := &relayReplicas{t: t, rs: redistest.Start(t), steps: &scriptedSteps{steps: map[string]chan string{}},
		answered: make(chan relayAnswer, 64), pushes: make(chan string, 16)}
	e.hook = pushHook(t, e.pushes)
	h := a2asrv.NewHandler(e.steps, a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)))
	agent := pushAgent(t, h)

	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.baseA, e.baseB = "http://"+lnA.Addr().String(), "http://"+lnB.Addr().String()
	target, _ := url.Parse(e.baseB)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		rw := &statusWriter{ResponseWriter: w}
		proxy.ServeHTTP(rw, r)
		e.answered <- relayAnswer{string(b), rw.status}
	}))
	t.Cleanup(lb.Close)
	cfg := "session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"agent_tasks: {redis_url: '" + e.rs.URL() + "', timeout: 200ms}\n" + authCfg +
		fmt.Sprintf("policy: {default: allow}\npublic_url: %s\nagents: [{name: research, url: %s, allow_push_addresses: [127.0.0.1]}]\n",
			lb.URL, agent.URL)
	startServeOn(t, lnA, cfg, nil)
	startServeOn(t, lnB, cfg, nil)
	return e
}

// register sends, through A with credential, a message whose task is
// named text, with alice's push config.
func (e *relayReplicas) register(credential, text string) string {
	_, got := callResearch(e.t, e.baseA, credential, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"`+text+`","role":"user","parts":[{"kind":"text","text":"`+text+`"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"`+e.hook.URL+`/alice","token":"alice-hook"}}}}`)
	return got
}

// step has the agent push a working update saying text on task's task,
// and returns B's answer to it.
func (e *relayReplicas) step(task, text string) int {
	e.t.Helper()
	e.steps.step(task) <- text
	for deadline := time.After(10 * time.Second); ; {
		select {
		case a := <-e.answered:
			if strings.Contains(a.body, text) {
				return a.status
			}
		case <-deadline:
			e.t.Fatalf("the agent's push %q never reached replica B", text)
			return 0
		}
	}
}

// delivered waits for alice's webhook to get the push saying text.
func (e *relayReplicas) delivered(text string) {
	e.t.Helper()
	for deadline := time.After(10 * time.Second); ; {
		select {
		case p := <-e.pushes:
			if !strings.HasPrefix(p, "alice-hook|") {
				e.t.Fatalf("alice's webhook got %.200s; want her token", p)
			}
			if strings.Contains(p, text) {
				return
			}
		case <-deadline:
			e.t.Fatalf("the agent's push %q never reached alice's webhook", text)
		}
	}
}

// nothingDelivered fails the test if alice's webhook got a push it has
// not taken yet.
func (e *relayReplicas) nothingDelivered(when string) {
	e.t.Helper()
	select {
	case p := <-e.pushes:
		e.t.Errorf("%s alice's webhook got %.200s", when, p)
	default:
	}
}

// scriptedSteps is an agent whose task for a message whose text is name
// pushes a working update saying each text sent on step(name).
type scriptedSteps struct {
	mu    sync.Mutex
	steps map[string]chan string
}

func (s *scriptedSteps) step(name string) chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps[name] == nil {
		s.steps[name] = make(chan string)
	}
	return s.steps[name]
}

func (s *scriptedSteps) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
		return err
	}
	name := ""
	if tp, ok := rc.Message.Parts[0].(a2ago.TextPart); ok {
		name = tp.Text
	}
	for {
		select {
		case text := <-s.step(name):
			ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateWorking, a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, a2ago.TextPart{Text: text}))
			if err := q.Write(ctx, ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (*scriptedSteps) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// TestPushRelayReplicasWarnsWithoutKeys: with agent_tasks.redis_url but
// no session_keys, relays are not put in Redis with the callers' webhook
// secrets in clear: they stay in each replica, and serve says so at
// start; with session_keys it does not warn.
func TestPushRelayReplicasWarnsWithoutKeys(t *testing.T) {
	rs := redistest.Start(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	keyFile, _, _ := aliceAndMallory(t)
	base := "policy: {default: allow}\nauth: {mode: api_key, api_keys: {file: " + keyFile + "}}\npublic_url: https://gw.example.com\n" +
		"agents: [{name: research, url: 'https://research.example.com'}]\nagent_tasks: {redis_url: '" + rs.URL() + "'}\n"
	keys := "session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n"
	for _, c := range []struct {
		name, yaml string
		warn       bool
	}{
		{"without session_keys", base, true},
		{"with session_keys", base + keys, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			warned := false
			for _, l := range serveLogged(t, c.yaml, srv.URL+"/mcp", func(string) {}) {
				if l["level"] == "WARN" && strings.Contains(l["msg"].(string), "A2A push relays stay in the replica") {
					warned = true
				}
			}
			if warned != c.warn {
				t.Errorf("warned %v, want %v", warned, c.warn)
			}
		})
	}
}

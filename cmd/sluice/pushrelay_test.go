package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/a2asrv/push"
)

// TestPushRelayedWithAPIKey, end to end through sluice serve with auth:
// (API keys) and public_url: alice registers a push config with her
// message to an agent (a2a-go's server with its HTTP push sender); the
// agent's push reaches her webhook, past the gateway's authentication
// (the relay's token is the agent's credential there), with her token;
// after her key is revoked the agent's next push is not delivered. Before,
// with auth: her push config was refused (-32003).
func TestPushRelayedWithAPIKey(t *testing.T) {
	keyFile, key, _ := aliceAndMallory(t)
	pushes := make(chan string, 16)
	hook := pushHook(t, pushes)
	step, release := make(chan struct{}), make(chan struct{})
	sent := make(chan string, 16) // the state of each push the agent sent
	h := a2asrv.NewHandler(pushSteps{step, release}, a2asrv.WithPushNotifications(push.NewInMemoryStore(),
		notedSender{push.NewHTTPPushSender(nil), sent}))
	agent := pushAgent(t, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	startServeOn(t, ln, fmt.Sprintf("policy: {default: allow}\nauth: {mode: api_key, api_keys: {file: %s}}\npublic_url: %s\nagents: [{name: research, url: %s, allow_push_addresses: [127.0.0.1]}]\n",
		keyFile, base, agent.URL), nil)
	call := func(body string) (int, string) { return callResearch(t, base, key, body) }
	// Only an agent's push to a relay passes authentication: a path that
	// leads elsewhere once cleaned does not.
	for _, path := range []string{"/a2a/.push/x/../../research", "/a2a/.push/x/..%2f..%2fresearch"} {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an unauthenticated POST to %s: HTTP %d, want 401", path, resp.StatusCode)
		}
	}
	if card := get(t, base+"/a2a/research/.well-known/agent-card.json", key); !strings.Contains(card, `"pushNotifications":true`) {
		t.Errorf("card %s; want pushNotifications true (relayed)", card)
	}
	_, got := call(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + hook.URL + `/alice","token":"alice-hook"}}}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("alice's message with a push config: %s", got)
	}
	close(step)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case p := <-pushes:
			if !strings.HasPrefix(p, "alice-hook|") {
				t.Fatalf("alice's webhook got %.200s; want her token", p)
			}
			if !strings.Contains(p, "PROGRESS") {
				continue
			}
		case <-deadline:
			t.Fatal("the agent's push never reached alice's webhook")
		}
		break
	}
	revokeFirstKey(t, keyFile)
	// The key file is read again at most once a second: until the
	// gateway refuses the key, the revocation has not taken.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if status, _ := call(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"x"}}`); status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's revoked key still admitted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(release)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case state := <-sent:
			if state != string(a2ago.TaskStateCompleted) {
				continue
			}
		case <-deadline:
			t.Fatal("the agent never pushed the task's completion")
		}
		break
	}
	select {
	case p := <-pushes:
		t.Errorf("after alice's key was revoked her webhook got %.200s", p)
	default:
	}
}

func get(t *testing.T, url, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// notedSender is a push sender that tells sent the state of each task
// once its push is sent (delivered or not).
type notedSender struct {
	inner a2asrv.PushSender
	sent  chan<- string
}

func (s notedSender) SendPush(ctx context.Context, c *a2ago.PushConfig, task *a2ago.Task) error {
	err := s.inner.SendPush(ctx, c, task)
	s.sent <- string(task.Status.State)
	return err
}

// pushSteps starts a task, reports progress once step is closed, and
// completes it with a secret once release is.
type pushSteps struct{ step, release <-chan struct{} }

func (a pushSteps) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
		return err
	}
	for i, ch := range []<-chan struct{}{a.step, a.release} {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		state, text := a2ago.TaskStateWorking, "PROGRESS"
		if i == 1 {
			state, text = a2ago.TaskStateCompleted, "SECRET-AFTER-REVOCATION"
		}
		ev := a2ago.NewStatusUpdateEvent(rc, state, a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, a2ago.TextPart{Text: text}))
		ev.Final = i == 1
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

func (pushSteps) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error { return nil }

// TestPushRelayNeedsPublicURL: the relay is on by default with auth: and
// public_url; asked for without public_url (the URL agents reach the
// gateway at), the config is refused at start-up saying what to set.
func TestPushRelayNeedsPublicURL(t *testing.T) {
	keyFile, _, _ := aliceAndMallory(t)
	const agents = "agents: [{name: research, url: http://127.0.0.1:9}]\npolicy: {default: allow}\n"
	authed := "auth: {mode: api_key, api_keys: {file: " + keyFile + "}}\n"
	for _, c := range []struct {
		name, yaml string
		on         bool
		err        string
	}{
		{"auth and public_url", agents + authed + "public_url: https://gw.example.com\n", true, ""},
		{"auth without public_url", agents + authed, false, ""},
		{"no auth", agents + "public_url: https://gw.example.com\n", false, ""},
		{"asked for without auth", agents + "public_url: https://gw.example.com\npush_relay: {enabled: true}\n", true, ""},
		{"turned off", agents + authed + "public_url: https://gw.example.com\npush_relay: {enabled: false}\n", false, ""},
		{"asked for without public_url", agents + authed + "push_relay: {enabled: true, timeout: 5s}\n", false, "push_relay.enabled needs public_url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig("c.yaml", []byte("data_dir: "+t.TempDir()+"\n"+c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cfg.preflight()
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "c.yaml")):
				t.Fatalf("got %v, want an error naming the file and saying %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("got %v", err)
			}
			if on, _ := cfg.pushRelay(); c.err == "" && on != c.on {
				t.Errorf("relay on %v, want %v", on, c.on)
			}
		})
	}
}

// TestPushRelaySummary: the start-up summary says where agents' pushes
// are relayed, and warns when auth: without public_url leaves push configs
// refused.
func TestPushRelaySummary(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	keyFile, _, _ := aliceAndMallory(t)
	authed := "policy: {default: allow}\nauth: {mode: api_key, api_keys: {file: " + keyFile + "}}\nagents: [{name: research, url: 'https://research.example.com'}]\n"
	lines := serveLogged(t, authed+"public_url: https://gw.example.com\n", srv.URL+"/mcp", func(string) {})
	if find(lines, "a2a push notifications relayed", map[string]any{"relay": "https://gw.example.com/a2a/.push/"}) == nil {
		t.Errorf("no push relay line in\n%v", lines)
	}
	lines = serveLogged(t, authed, srv.URL+"/mcp", func(string) {})
	found := false
	for _, l := range lines {
		if l["level"] == "WARN" && strings.Contains(l["msg"].(string), "push notification configs are refused") {
			found = true
		}
	}
	if !found {
		t.Errorf("no WARN that push configs are refused in\n%v", lines)
	}
}

// TestPushRelayOpenRefusesDelivered: a push the relay delivered that
// comes back to the gateway on any path, an MCP route's as an A2A one's,
// is answered 508 before authentication could admit the caller's
// credentials it carries (the agent calling the gateway as the caller).
func TestPushRelayOpenRefusesDelivered(t *testing.T) {
	served := ""
	h := pushRelayOpen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = "open" }),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = "authed" }))
	for _, path := range []string{"/mcp/files", "/a2a/research", "/a2a/.push/abc"} {
		served = ""
		r := httptest.NewRequest(http.MethodPost, "http://gw.example.com"+path, strings.NewReader(`{}`))
		r.Header.Set("Sluice-Push-Relay", "1")
		r.Header.Set("Authorization", "Bearer alice-key")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusLoopDetected || served != "" {
			t.Errorf("%s: HTTP %d, served by %q; want 508, by neither", path, w.Code, served)
		}
	}
}

// TestPushRelayOpenPathTricks: requests without credentials written to
// look like a push to a relay but to reach something else (encoded
// slashes and dots, doubled slashes, another case, a query or fragment,
// an absolute-form target, a method override header) get 401 from
// authentication, or the relay's own 404; none reaches an agent or an
// MCP upstream.
func TestPushRelayOpenPathTricks(t *testing.T) {
	keyFile, _, _ := aliceAndMallory(t)
	reached := make(chan string, 64)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			reached <- r.Method + " " + r.URL.String()
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(agent.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	startServeOn(t, ln, fmt.Sprintf("policy: {default: allow}\nauth: {mode: api_key, api_keys: {file: %s}}\npublic_url: http://%s\nagents: [{name: research, url: %s}]\n",
		keyFile, host, agent.URL), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached <- "mcp " + r.Method + " " + r.URL.String()
			h.ServeHTTP(w, r)
		})
	})
	const rpc = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct {
		target string
		header string
		want   int
	}{
		{"/a2a/.push/x", "", http.StatusNotFound}, // the relay's: no such relay
		{"/a2a/.push/x?next=/../../research", "", http.StatusNotFound},
		{"/a2a/.push/x/../../research", "", http.StatusUnauthorized},
		{"/a2a/.push/..%2fresearch", "", http.StatusUnauthorized},
		{"/a2a/.push/%2e%2e", "", http.StatusUnauthorized},
		{"/a2a/.push/x%2F..%2F..%2Fresearch", "", http.StatusUnauthorized},
		{"/a2a/.push/x;/../../research", "", http.StatusUnauthorized},
		{`/a2a/.push/x\..\..\research`, "", http.StatusUnauthorized},
		{"//a2a/.push/x", "", http.StatusUnauthorized},
		{"/a2a//.push/x", "", http.StatusUnauthorized},
		{"/A2A/.PUSH/x", "", http.StatusUnauthorized},
		{"/a2a/%2Epush/x", "", http.StatusNotFound}, // the same path, spelt otherwise: the relay's
		{"/a2a/.push/x/", "", http.StatusUnauthorized},
		{"/a2a/.push/x%00", "", http.StatusNotFound},
		{"http://" + host + "/a2a/.push/x", "", http.StatusNotFound},
		{"http://" + host + "/a2a/.push/x/../../../mcp/demo", "", http.StatusUnauthorized},
		{"/mcp/demo", "X-HTTP-Method-Override: POST\r\nX-Original-URL: /a2a/.push/x\r\nX-Rewrite-URL: /a2a/.push/x\r\n", http.StatusUnauthorized},
	} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s", c.target, host, len(rpc), c.header, rpc)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(conn)
		conn.Close()
		status := 0
		fmt.Sscanf(string(b), "HTTP/1.1 %d", &status)
		if status != c.want {
			t.Errorf("POST %s: HTTP %d, want %d\n%.300s", c.target, status, c.want, b)
		}
		if status == http.StatusNotFound && !strings.Contains(string(b), "no push relay") {
			t.Errorf("POST %s: a 404 not the relay's: %.300s", c.target, b)
		}
	}
	select {
	case r := <-reached:
		t.Errorf("an unauthenticated request reached %s", r)
	default:
	}
}

// pushHook is a caller's webhook: each push it gets goes to pushes as
// its token, "|", its body.
func pushHook(t *testing.T, pushes chan<- string) *httptest.Server {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		pushes <- r.Header.Get("X-A2A-Notification-Token") + "|" + string(b)
	}))
	t.Cleanup(hook.Close)
	return hook
}

// pushAgent serves h, an a2a-go handler, as an agent that takes push
// configs, with its card.
func pushAgent(t *testing.T, h a2asrv.RequestHandler) *httptest.Server {
	mux := http.NewServeMux()
	var agent *httptest.Server
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"research","url":"%s/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3","capabilities":{"pushNotifications":true},"skills":[{"id":"echo","description":"Echo."}]}`, agent.URL)
	})
	mux.Handle("POST /rpc", a2asrv.NewJSONRPCHandler(h))
	agent = httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	return agent
}

// callResearch posts body to the agent "research" through the gateway at
// base with API key key, and returns the status and body of the answer.
func callResearch(t *testing.T, base, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/a2a/research", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

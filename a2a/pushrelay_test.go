package a2a

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/a2asrv/push"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// relayEnv is a gateway relaying pushes (Options.PushRelay) in front of
// one agent, "stub", whose callers are named by X-Test-Principal and
// whose credentials can be revoked one by one.
type relayEnv struct {
	g   *Gateway
	url string // the gateway's base URL (its PublicURL)

	mu      sync.Mutex
	revoked map[string]bool
	// unreadable: the key file cannot be read (the principals' Check, and
	// a replica's RecheckKey of them, cannot tell)
	unreadable bool
	checked    func(name string) // if set, told of each credential check
	// jwt: the principals are JWTs' (no key id, an exp), not API keys';
	// keyAgents are the names API keys are issued for, which such a
	// principal's Check refuses (auth.shared_agent_names off).
	jwt       bool
	keyAgents map[string]bool
	refused   []string // OnPushRefused: "principal: reason"
	results   []string // the Interceptor's OnResult: "tool agent result"
}

func newRelayEnv(t *testing.T, agent Agent, opts Options) *relayEnv {
	t.Helper()
	e := &relayEnv{revoked: map[string]bool{}, keyAgents: map[string]bool{}}
	srv := httptest.NewUnstartedServer(nil)
	e.url = "http://" + srv.Listener.Addr().String()
	agent.Name = "stub"
	opts.Agents = []Agent{agent}
	opts.PushRelay, opts.PublicURL = true, e.url
	opts.OnPushRefused = func(_, principal, reason string) {
		e.mu.Lock()
		e.refused = append(e.refused, principal+": "+reason)
		e.mu.Unlock()
	}
	g, err := New(opts, &intercept.Interceptor{Decider: allow, OnResult: func(d *intercept.ActionDescriptor, result jsontext.Value) {
		e.mu.Lock()
		e.results = append(e.results, d.ToolName+" "+d.Agent+" "+string(result))
		e.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.g = g
	h := g.Handler()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("X-Test-Principal")
		if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer key-of-"); ok && name == "" {
			name = key // a caller's key, as a push config's authentication may carry it
		}
		e.mu.Lock()
		jwt := e.jwt
		e.mu.Unlock()
		if name != "" && jwt {
			p := &intercept.Principal{ID: name, Method: "jwt", Claims: map[string]any{"sub": name}, Expires: time.Now().Add(time.Hour), Check: func() error {
				e.mu.Lock()
				defer e.mu.Unlock()
				if e.keyAgents[name] {
					return fmt.Errorf("agent %q is an API key's (auth.api_keys); a jwt credential cannot act as it", name)
				}
				return nil
			}}
			r = r.WithContext(intercept.WithPrincipal(r.Context(), p))
		} else if name != "" {
			p := &intercept.Principal{ID: name, Method: "api_key", Claims: map[string]any{"key_id": name}, Check: func() error {
				e.mu.Lock()
				defer e.mu.Unlock()
				if e.checked != nil {
					e.checked(name)
				}
				if e.unreadable {
					return errKeyFileUnreadable
				}
				if e.revoked[name] {
					return errors.New("API key revoked")
				}
				return nil
			}}
			r = r.WithContext(intercept.WithPrincipal(r.Context(), p))
		}
		if a := r.Header.Get("X-Test-Client"); a != "" { // as a trusted proxy forwards it
			r = r.WithContext(intercept.WithClientAddr(r.Context(), a))
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

func (e *relayEnv) revoke(name string) {
	e.mu.Lock()
	e.revoked[name] = true
	e.mu.Unlock()
}

// heard reports whether OnPushRefused heard s.
func (e *relayEnv) heard(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.refused {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

// webhook is a caller's push endpoint: every push it gets, with the
// token and authorization it came with.
type webhook struct {
	srv    *httptest.Server
	pushes chan string // "token|authorization|body"
}

func newWebhook(t *testing.T) *webhook {
	h := &webhook{pushes: make(chan string, 64)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.pushes <- r.Header.Get("X-A2A-Notification-Token") + "|" + r.Header.Get("Authorization") + "|" + string(b)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// next is the next push, or "" when none comes within d.
func (h *webhook) next(d time.Duration) string {
	select {
	case p := <-h.pushes:
		return p
	case <-time.After(d):
		return ""
	}
}

// goPushAgent is a2a-go's server with its push config store and HTTP push
// sender, running steps.
func goPushAgent(t *testing.T, steps stepsAgent) (*httptest.Server, *memTasks, *push.InMemoryPushConfigStore) {
	tasks := &memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}
	configs := push.NewInMemoryStore()
	h := a2asrv.NewHandler(steps, a2asrv.WithTaskStore(tasks),
		a2asrv.WithPushNotifications(configs, push.NewHTTPPushSender(nil)))
	return serveA2AGo(t, goodCard, h), tasks, configs
}

// agentConfigs are the push configs the agent holds, for any task.
func agentConfigs(tasks *memTasks, configs *push.InMemoryPushConfigStore) []*a2ago.PushConfig {
	var out []*a2ago.PushConfig
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	for id := range tasks.m {
		cs, _ := configs.List(context.Background(), id)
		out = append(out, cs...)
	}
	return out
}

// stepsAgent starts a task, reports progress ("PROGRESS") once step is
// closed, and completes it with a secret once release is.
type stepsAgent struct{ step, release <-chan struct{} }

func (a stepsAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
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

func (stepsAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return nil
}

func taskOf(t *testing.T, answer string) string {
	t.Helper()
	var task struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &task, json.RejectUnknownMembers(false)); err != nil || task.Result.ID == "" {
		t.Fatalf("no task in %s", answer)
	}
	return task.Result.ID
}

const msgHi = `"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}`

// TestPushRelayedToCaller: with auth: (a credential that can be revoked)
// a caller registers a push config through the gateway, with a2a-go's
// server and HTTP push sender as the agent: the agent holds the gateway's
// relay URL and token, never the caller's URL, token or credentials; the
// agent's push reaches the caller's webhook with the caller's token and
// authentication; a get or list shows the caller what it registered; and
// once the caller's key is revoked, the agent's next push is not
// delivered, the relay ends, and the drop is heard.
func TestPushRelayedToCaller(t *testing.T) {
	for _, c := range []struct {
		name     string
		register func(t *testing.T, gw, hook string) (task string)
	}{
		{"message/send configuration", func(t *testing.T, gw, hook string) string {
			return taskOf(t, do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{`+msgHi+`,"configuration":{"blocking":false,"pushNotificationConfig":{"url":"`+hook+`","token":"alice-hook","authentication":{"schemes":["Bearer"],"credentials":"alice-webhook-secret"}}}}}`))
		}},
		{"message/stream configuration", func(t *testing.T, gw, hook string) string {
			req, _ := http.NewRequest(http.MethodPost, gw, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{`+msgHi+`,"configuration":{"pushNotificationConfig":{"url":"`+hook+`","token":"alice-hook","authentication":{"schemes":["Bearer"],"credentials":"alice-webhook-secret"}}}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Test-Principal", "alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			// The stream's first event names the task; the stream stays
			// open while the agent works.
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended before an event: %v", err)
				}
				if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
					return taskOf(t, data)
				}
			}
		}},
		{"tasks/pushNotificationConfig/set", func(t *testing.T, gw, hook string) string {
			task := taskOf(t, do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{`+msgHi+`,"configuration":{"blocking":false}}}`))
			got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"id":"cfg","url":"`+hook+`","token":"alice-hook","authentication":{"schemes":["Bearer"],"credentials":"alice-webhook-secret"}}}}`)
			if !strings.Contains(got, hook) || !strings.Contains(got, "alice-hook") || strings.Contains(got, "/a2a/.push/") {
				t.Errorf("set answered %s; want alice's own URL and token, not the relay's", got)
			}
			return task
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hook := newWebhook(t)
			step, release := make(chan struct{}), make(chan struct{})
			agent, tasks, configs := goPushAgent(t, stepsAgent{step, release})
			e := newRelayEnv(t, Agent{URL: agent.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
			gw := e.url + "/a2a/stub"
			task := c.register(t, gw, hook.srv.URL+"/alice")

			held := agentConfigs(tasks, configs)
			if len(held) != 1 {
				t.Fatalf("the agent holds %d push configs, want 1", len(held))
			}
			if cfg := held[0]; !strings.HasPrefix(cfg.URL, e.url+"/a2a/.push/") || cfg.Token == "" || cfg.Token == "alice-hook" || cfg.Auth != nil {
				t.Fatalf("the agent holds url %q token %q auth %v; want the gateway's relay and token, nothing of alice's", cfg.URL, cfg.Token, cfg.Auth)
			}
			// The task's progress, delivered with alice's token and
			// credentials.
			close(step)
			got := ""
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(got, "PROGRESS") && time.Now().Before(deadline); {
				got = hook.next(100 * time.Millisecond)
			}
			if !strings.HasPrefix(got, "alice-hook|Bearer alice-webhook-secret|") || !strings.Contains(got, task) {
				t.Fatalf("alice's webhook got %.300q; want the task's push with her token and credentials", got)
			}
			list := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/list","params":{"id":"`+task+`"}}`)
			if !strings.Contains(list, hook.srv.URL+"/alice") || !strings.Contains(list, "alice-hook") || strings.Contains(list, "/a2a/.push/") || strings.Contains(list, held[0].Token) {
				t.Errorf("list answered %s; want alice's own URL and token, not the relay's", list)
			}

			e.revoke("alice")
			close(release) // the agent completes the task, with a secret
			deadline := time.Now().Add(10 * time.Second)
			for !e.heard("alice: the caller's credential no longer holds") && time.Now().Before(deadline) {
				if got := hook.next(50 * time.Millisecond); strings.Contains(got, "SECRET-AFTER-REVOCATION") {
					t.Fatalf("after alice's key was revoked her webhook got %.300s", got)
				}
			}
			if !e.heard("alice: the caller's credential no longer holds") {
				t.Fatal("no push dropped for the revoked caller was heard")
			}
			if got := hook.next(100 * time.Millisecond); strings.Contains(got, "SECRET") {
				t.Errorf("after alice's key was revoked her webhook got %.300s", got)
			}
			if n := e.g.pushes.len(); n != 0 {
				t.Errorf("%d relays left after the caller's credential lapsed, want 0", n)
			}
		})
	}
}

// relayOf registers hook for a task of principal's through e with 0.3's
// tasks/pushNotificationConfig/set (the agent: rec, which answers every
// message with a completed task of its own id and records what it gets)
// and returns the task and the relay URL and token the agent was given.
func relayOf(t *testing.T, e *relayEnv, rec *recAgent, principal, hook string) (task, url, token string) {
	t.Helper()
	gw := e.url + "/a2a/stub"
	task = taskOf(t, do(t, "POST", gw, principal, "", sendHi))
	url, token = setRelay(t, e, rec, principal, `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"url":"`+hook+`","token":"`+principal+`-hook"}}}`)
	return task, url, token
}

// setRelay sends set, a push config's registration, through e as
// principal and returns the relay URL and token the agent was given.
func setRelay(t *testing.T, e *relayEnv, rec *recAgent, principal, set string) (url, token string) {
	t.Helper()
	if got := do(t, "POST", e.url+"/a2a/stub", principal, "", set); strings.Contains(got, `"error"`) {
		t.Fatalf("set: %s", got)
	}
	rec.mu.Lock()
	last := rec.seen[len(rec.seen)-1]
	rec.mu.Unlock()
	url, token, ok := agentGotConfig(last)
	if !ok || !strings.HasPrefix(url, e.url+PushRelayPath) {
		t.Fatalf("the agent got %s; want a relay URL", last)
	}
	return url, token
}

// pushAs POSTs body to a relay as an agent would, with token (none if
// ""), and returns the status and answer.
func pushAs(t *testing.T, url, token, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-A2A-Notification-Token", token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// forged is token with its last character changed. (Replaced by a fixed
// "A", it was token itself once in 16 runs: the last of 43 base64
// characters of 32 bytes is one of 16.)
func forged(token string) string {
	last := "A"
	if strings.HasSuffix(token, last) {
		last = "B"
	}
	return token[:len(token)-1] + last
}

func taskPush(task, state string) string {
	return `{"kind":"task","id":"` + task + `","contextId":"c","status":{"state":"` + state + `"}}`
}

// TestAttackPushRelay: what an agent, another caller or anyone who can
// reach the gateway might do with a relay, each refused without a
// delivery: a push without the relay's token or with another's, a forged
// or replayed one, another task's update through the relay, a body past
// the bound, a push that comes back to the relay; and what a caller
// might register: a URL leading to the gateway's own relay.
func TestAttackPushRelay(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{MaxBody: 64 << 10})
	aliceTask, aliceURL, aliceTok := relayOf(t, e, rec, "alice", hook.srv.URL+"/alice")
	bobTask, bobURL, bobTok := relayOf(t, e, rec, "bob", hook.srv.URL+"/bob")

	for _, c := range []struct {
		name, url, token, body string
		header                 []string
		status                 int
	}{
		{"no token", aliceURL, "", taskPush(aliceTask, "working"), nil, http.StatusUnauthorized},
		{"another relay's token", aliceURL, bobTok, taskPush(aliceTask, "working"), nil, http.StatusUnauthorized},
		{"a forged token", aliceURL, forged(aliceTok), taskPush(aliceTask, "working"), nil, http.StatusUnauthorized},
		{"a relay id made up", e.url + PushRelayPath + "AAAAAAAAAAAAAAAAAAAAAA", aliceTok, taskPush(aliceTask, "working"), nil, http.StatusNotFound},
		{"another caller's task through alice's relay", aliceURL, aliceTok, taskPush(bobTask, "working"), nil, http.StatusForbidden},
		{"a task id in a case variant", aliceURL, aliceTok, `{"kind":"task","id":"` + aliceTask + `","ID":"` + bobTask + `","status":{"state":"working"}}`, nil, http.StatusForbidden},
		{"two tasks", aliceURL, aliceTok, `{"kind":"status-update","taskId":"` + aliceTask + `","task":{"id":"` + bobTask + `"}}`, nil, http.StatusForbidden},
		{"no task", aliceURL, aliceTok, `{"kind":"task","status":{"state":"working"}}`, nil, http.StatusForbidden},
		{"a body past the bound", aliceURL, aliceTok, `{"kind":"task","id":"` + aliceTask + `","metadata":{"pad":"` + strings.Repeat("x", 128<<10) + `"}}`, nil, http.StatusRequestEntityTooLarge},
		{"a push the gateway delivered, come back", aliceURL, aliceTok, taskPush(aliceTask, "working"), []string{relayHopHeader, "1"}, http.StatusLoopDetected},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, got := pushAs(t, c.url, c.token, c.body, c.header...); status != c.status {
				t.Errorf("got HTTP %d %s, want %d", status, got, c.status)
			}
			if got := hook.next(20 * time.Millisecond); got != "" {
				t.Errorf("the webhook got %.200s", got)
			}
		})
	}
	if !e.heard("alice: wrong or missing token") || !e.heard("alice: the push names another task") {
		t.Errorf("refusals heard: %q; want the wrong tokens and the other task", e.refused)
	}

	// Each relay delivers its own caller's task to its own caller.
	if status, got := pushAs(t, bobURL, bobTok, taskPush(bobTask, "working")); status != http.StatusOK {
		t.Fatalf("bob's push: HTTP %d %s", status, got)
	}
	if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "bob-hook||") || !strings.Contains(got, bobTask) {
		t.Fatalf("bob's webhook got %.200q", got)
	}
	// What was delivered was screened as an answer is (scan_results).
	e.mu.Lock()
	screened := slices.ContainsFunc(e.results, func(r string) bool { return strings.HasPrefix(r, "push bob ") && strings.Contains(r, bobTask) })
	e.mu.Unlock()
	if !screened {
		t.Errorf("the push delivered was not handed to OnResult (%q)", e.results)
	}
	// A task's final state ends its relay: the token replayed later
	// delivers nothing.
	if status, got := pushAs(t, aliceURL, aliceTok, taskPush(aliceTask, "completed")); status != http.StatusOK {
		t.Fatalf("alice's push: HTTP %d %s", status, got)
	}
	hook.next(5 * time.Second)
	if status, _ := pushAs(t, aliceURL, aliceTok, taskPush(aliceTask, "working")); status != http.StatusNotFound {
		t.Errorf("a push replayed after the task ended: HTTP %d, want 404", status)
	}
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("the webhook got a replayed push: %.200s", got)
	}

	// A caller's URL leading to the gateway's own relay (in any spelling
	// a server reads as that path) is refused when it is registered.
	gw := e.url + "/a2a/stub"
	for _, variant := range []string{`"Token":"x"`, `"AUTHENTICATION":{"schemes":["Bearer"],"credentials":"c"}`, `"Id":"c"`} {
		got := do(t, "POST", gw, "bob", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+bobTask+`","pushNotificationConfig":{"url":"`+hook.srv.URL+`/bob",`+variant+`}}}`)
		if !strings.Contains(got, "is written") {
			t.Errorf("a push config with %s: %.300s, want refused", variant, got)
		}
	}
	for _, loop := range []string{bobURL, strings.Replace(bobURL, "/a2a/.push/", "/A2A/.PUSH/", 1), "https://93.184.216.34/a2a/.push/x"} {
		got := do(t, "POST", gw, "bob", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+bobTask+`","pushNotificationConfig":{"url":"`+loop+`"}}}`)
		if !strings.Contains(got, "loop") {
			t.Errorf("a push URL leading to the relay (%s): %.300s, want refused", loop, got)
		}
	}
}

// TestAttackPushRelayDialsPrivate: a push URL is checked when the config
// is set, but the agent's pushes come later, when the name may resolve
// elsewhere (DNS rebinding). The relay checks the address it connects to:
// a name that resolves to loopback is refused at dial time, unless the
// agent's allow_push_addresses lets it through.
func TestAttackPushRelayDialsPrivate(t *testing.T) {
	hook := newWebhook(t)
	_, port, _ := net.SplitHostPort(hook.srv.Listener.Addr().String())
	for _, c := range []struct {
		allow     []string
		delivered bool
	}{
		{nil, false},
		{[]string{"127.0.0.0/8", "::1"}, true},
	} {
		t.Run(fmt.Sprint(c.allow), func(t *testing.T) {
			rec := newRecAgent(t, goodCard)
			e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: c.allow}, Options{})
			task := taskOf(t, do(t, "POST", e.url+"/a2a/stub", "alice", "", sendHi))
			// What the check at registration let through, as a public
			// name: now it resolves to loopback.
			r := &pushRecord{id: randomID(16), token: randomID(32), agent: "stub", owner: "alice", task: task,
				url: "http://localhost:" + port + "/rebound", callerTok: "alice-hook"}
			if err := e.g.pushes.add(r); err != nil {
				t.Fatal(err)
			}
			status, got := pushAs(t, e.g.relayURL(r.id), r.token, taskPush(task, "working"))
			delivered := hook.next(200*time.Millisecond) != ""
			if delivered != c.delivered {
				t.Errorf("delivered %v (agent answered HTTP %d %s), want %v", delivered, status, got, c.delivered)
			}
			if !c.delivered && (status != http.StatusBadGateway || !strings.Contains(got, "gateway's network")) {
				t.Errorf("agent answered HTTP %d %s; want 502 naming the refused address", status, got)
			}
		})
	}
}

// TestPushRelaySlowWebhook: a caller's webhook that never answers holds
// the agent's push for PushTimeout, not for ever, and holds one of the
// PushDeliveries at once: past them another push is answered 503 at once.
func TestPushRelaySlowWebhook(t *testing.T) {
	slow, stop, arrived := stalledWebhook(t, 1)
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{PushTimeout: time.Second, PushDeliveries: 1})
	t.Cleanup(func() { close(stop) }) // first: the gateway's Close waits for the push
	task, url, token := relayOf(t, e, rec, "alice", slow.URL+"/hook")
	done := pushAsync(url, token, taskPush(task, "working"))
	<-arrived
	if status, got := pushAs(t, url, token, taskPush(task, "working")); status != http.StatusServiceUnavailable {
		t.Errorf("a push while the one delivery allowed is held: HTTP %d %s, want 503", status, got)
	}
	select {
	case status := <-done:
		if status != http.StatusGatewayTimeout {
			t.Errorf("got HTTP %d, want 504", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's push is still held by a webhook that does not answer")
	}
}

// TestPushRelayDelete: deleting a push config through the gateway ends
// its relay: the agent's token is good for nothing after, and get shows
// the caller its own URL, never the relay's token.
func TestPushRelayDelete(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	task, url, token := relayOf(t, e, rec, "alice", hook.srv.URL+"/alice")
	var id string
	e.g.pushes.mu.Lock()
	for _, r := range e.g.pushes.byID {
		id = r.configID
	}
	e.g.pushes.mu.Unlock()
	if id == "" {
		t.Fatal("the relay has no config id")
	}
	got := do(t, "POST", e.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+id+`"}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("delete: %s", got)
	}
	if status, _ := pushAs(t, url, token, taskPush(task, "working")); status != http.StatusNotFound {
		t.Errorf("a push after its config was deleted: HTTP %d, want 404", status)
	}
}

// TestPushRelayShowsCaller: an agent's answer about push configs names the
// relay; the caller is shown what it registered, and a relay not its own
// (or gone) loses its token.
func TestPushRelayShowsCaller(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	_, url, token := relayOf(t, e, rec, "alice", "http://127.0.0.1:9/alice")
	answer := `{"configs":[{"taskId":"t","pushNotificationConfig":{"id":"x","url":"` + url + `","token":"` + token + `"}}]}`
	for _, c := range []struct{ owner, want, notWant string }{
		{"alice", `"url":"http://127.0.0.1:9/alice"`, token},
		{"bob", `"url":"` + url + `"`, token},
	} {
		got := string(e.g.showCaller(context.Background(), "stub", c.owner, []byte(answer)))
		if !strings.Contains(got, c.want) || strings.Contains(got, c.notWant) {
			t.Errorf("%s is shown %s; want %s and no relay token", c.owner, got, c.want)
		}
	}
}

// TestCardSaysPushRelayed: where callers' credentials can lapse but the
// gateway relays their pushes, the card it serves says what the agent
// says of push notifications again.
func TestCardSaysPushRelayed(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","capabilities":{"pushNotifications":true},"skills":[{"id":"echo","description":"Echo."}]}`)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL}, Options{CredentialsLapse: true})
	if got := do(t, "GET", e.url+"/a2a/stub/.well-known/agent-card.json", "", "", ""); !strings.Contains(got, `"pushNotifications":true`) {
		t.Errorf("card %s; want pushNotifications true", got)
	}
}

// TestPushRelayed10: 1.0's ways of registering a push config, on
// JSON-RPC and REST, reach the agent with the relay's URL and token and
// none of the caller's, and the caller is answered with its own.
func TestPushRelayed10(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL}, Options{})
	gw := e.url + "/a2a/stub"
	task := taskOf(t, do(t, "POST", gw, "alice", "", sendHi))
	const hook = `"url":"https://93.184.216.34/alice","token":"alice-hook","authentication":{"scheme":"Bearer","credentials":"alice-secret"}`
	const msg10 = `"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	for _, c := range []struct{ name, path, body string }{
		{"CreateTaskPushNotificationConfig", "", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"` + task + `",` + hook + `}}`},
		{"SendMessage configuration", "", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{` + msg10 + `,"configuration":{"pushNotificationConfig":{` + hook + `}}}}`},
		{"REST create", "/rest/tasks/" + task + "/pushNotificationConfigs", `{` + hook + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := do(t, "POST", gw+c.path, "alice", "1.0", c.body)
			if strings.Contains(got, "error") || strings.Contains(got, "ERROR") {
				t.Fatalf("got %.300s", got)
			}
			rec.mu.Lock()
			last := rec.seen[len(rec.seen)-1]
			rec.mu.Unlock()
			if !strings.Contains(last, e.url+PushRelayPath) || strings.Contains(last, "alice-hook") || strings.Contains(last, "alice-secret") || strings.Contains(last, "93.184.216.34") {
				t.Errorf("the agent got %.400s; want the relay's URL and token, nothing of alice's", last)
			}
		})
	}
}

// TestPushRelayReplaced: a config set again under its id replaces the
// agent's, and the relay of the one replaced ends with it: its token
// delivers nothing after.
func TestPushRelayReplaced(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	gw := e.url + "/a2a/stub"
	task := taskOf(t, do(t, "POST", gw, "alice", "", sendHi))
	set := `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + task + `","pushNotificationConfig":{"id":"cfg","url":"` + hook.srv.URL + `/alice"}}}`
	do(t, "POST", gw, "alice", "", set)
	var first *pushRecord
	e.g.pushes.mu.Lock()
	for _, r := range e.g.pushes.byID {
		first = r
	}
	e.g.pushes.mu.Unlock()
	do(t, "POST", gw, "alice", "", set)
	if n := e.g.pushes.len(); n != 1 {
		t.Errorf("%d relays after setting one config twice, want 1", n)
	}
	if status, _ := pushAs(t, e.g.relayURL(first.id), first.token, taskPush(task, "working")); status != http.StatusNotFound {
		t.Errorf("the replaced relay's push: HTTP %d, want 404", status)
	}
}

// TestPushRelaysBound: one principal holds at most a tenth of the relays,
// its oldest ending first, so that one registering without end does not
// end another's; past the bound a registration is refused; a relay
// unused past the TTL ends.
func TestPushRelaysBound(t *testing.T) {
	p, add, advance := clockedRelays(10)
	first, _ := add("alice")
	second, _ := add("alice")
	if p.get(first.id) != nil || p.get(second.id) == nil {
		t.Errorf("alice's second relay did not end her first (a tenth of 10 each)")
	}
	for i := range 9 {
		if _, err := add(fmt.Sprint("p", i)); err != nil {
			t.Fatalf("relay %d: %v", i, err)
		}
	}
	if _, err := add("mallory"); err == nil {
		t.Error("an 11th principal's relay past the bound of 10 was taken")
	}
	if p.get(second.id) == nil {
		t.Error("alice's relay ended for another principal's")
	}
	advance(2 * time.Hour)
	if p.get(second.id) != nil {
		t.Error("a relay unused past its TTL still answers")
	}
	if _, err := add("mallory"); err != nil {
		t.Errorf("with the relays expired: %v", err)
	}
}

// TestPushRelayBindsFirstPush: a config registered with a message names
// no task until the agent's answer does; a push that comes first (a
// blocking message/send is answered when its task ends) binds the relay
// to the task it names, if that task is the caller's or no one's yet,
// never another caller's; 1.0's shapes (statusUpdate) are read as 0.3's,
// and a final state ends the relay.
func TestPushRelayBindsFirstPush(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	bobTask := taskOf(t, do(t, "POST", e.url+"/a2a/stub", "bob", "", sendHi))
	unbound := func() *pushRecord {
		r := &pushRecord{id: randomID(16), token: randomID(32), agent: "stub", owner: "alice", url: hook.srv.URL + "/alice"}
		if err := e.g.pushes.add(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := unbound()
	if status, got := pushAs(t, e.g.relayURL(r.id), r.token, taskPush(bobTask, "working")); status != http.StatusForbidden || !strings.Contains(got, "another caller's task") {
		t.Errorf("bob's task through alice's unbound relay: HTTP %d %s, want 403", status, got)
	}
	if status, got := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"fresh","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`); status != http.StatusOK {
		t.Fatalf("the first push of a task no one owns: HTTP %d %s", status, got)
	}
	if got := hook.next(5 * time.Second); !strings.Contains(got, "fresh") {
		t.Fatalf("alice's webhook got %.200q", got)
	}
	if !e.g.tasks.owns(context.Background(), "stub", "fresh", "alice") {
		t.Error("the task the first push named is not alice's")
	}
	if status, _ := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"other","status":{"state":"TASK_STATE_WORKING"}}}`); status != http.StatusForbidden {
		t.Errorf("another task after the relay was bound: HTTP %d, want 403", status)
	}
	if status, _ := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"fresh","status":{"state":"TASK_STATE_COMPLETED"}}}`); status != http.StatusOK {
		t.Errorf("the task's final push: HTTP %d", status)
	}
	hook.next(5 * time.Second)
	if status, got := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"fresh","status":{"state":"TASK_STATE_WORKING"}}}`); status != http.StatusNotFound || !strings.Contains(got, "another replica") {
		t.Errorf("a push after the task's final state: HTTP %d %s, want 404 saying why", status, got)
	}
}

// TestPushRelayNotTaken: a push config the agent refuses (an error
// answer) leaves no relay behind.
func TestPushRelayNotTaken(t *testing.T) {
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", agent.URL))
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), "message/send") {
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"}}}`)
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"error":{"code":-32003,"message":"push notifications not supported"}}`)
	}))
	t.Cleanup(agent.Close)
	e := newRelayEnv(t, Agent{URL: agent.URL}, Options{})
	gw := e.url + "/a2a/stub"
	task := taskOf(t, do(t, "POST", gw, "alice", "", sendHi))
	got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"url":"https://93.184.216.34/alice"}}}`)
	if !strings.Contains(got, `"error"`) {
		t.Fatalf("set: %s, want the agent's error", got)
	}
	if n := e.g.pushes.len(); n != 0 {
		t.Errorf("%d relays after the agent refused the config, want 0", n)
	}
}

// TestIsPushRelay: only a POST of one clean segment under PushRelayPath
// passes sluice serve's authentication as an agent's push; a path that
// leads elsewhere once cleaned, or another method, does not.
func TestIsPushRelay(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/a2a/.push/abc", true},
		{"GET", "/a2a/.push/abc", false},
		{"POST", "/a2a/.push/", false},
		{"POST", "/a2a/.push/..", false},
		{"POST", "/a2a/.push/abc/../../stub", false},
		{"POST", "/a2a/.push/abc/rest", false},
		{"POST", `/a2a/.push/abc\..\..\stub`, false},
		{"POST", "/a2a/.pushx/abc", false},
		{"POST", "/a2a/stub", false},
	} {
		r := httptest.NewRequest(c.method, "http://gw.example.com/", nil)
		r.URL.Path = c.path
		if got := IsPushRelay(r); got != c.want {
			t.Errorf("%s %s: got %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// TestAttackPushRelayFailureHidesCaller: a delivery that fails answers
// the agent without the caller's URL (its host, path or query, where
// webhooks keep secrets), and logs it without its path and query: the
// agent was given the relay so that it never learns where pushes go.
func TestAttackPushRelayFailureHidesCaller(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there now: connection refused
	for _, c := range []struct {
		name  string
		allow []string
		want  int
	}{
		{"connection refused", []string{"127.0.0.1"}, http.StatusBadGateway},
		{"address refused", nil, http.StatusBadGateway},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs syncBuffer
			rec := newRecAgent(t, goodCard)
			e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: c.allow}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			task := taskOf(t, do(t, "POST", e.url+"/a2a/stub", "alice", "", sendHi))
			secretURL := closedURL + "/hooks/T0-alice-secret-path?sig=s3cr3t-query"
			r := &pushRecord{id: randomID(16), token: randomID(32), agent: "stub", owner: "alice", task: task, url: secretURL, callerTok: "alice-hook"}
			if err := e.g.pushes.add(r); err != nil {
				t.Fatal(err)
			}
			status, got := pushAs(t, e.g.relayURL(r.id), r.token, taskPush(task, "working"))
			if status != c.want {
				t.Errorf("got HTTP %d %s, want %d", status, got, c.want)
			}
			host := strings.TrimPrefix(closedURL, "http://")
			for _, secret := range []string{host, "alice-secret-path", "s3cr3t-query"} {
				if strings.Contains(got, secret) {
					t.Errorf("the agent was answered %q, naming the caller's URL (%s)", got, secret)
				}
			}
			for _, secret := range []string{"alice-secret-path", "s3cr3t-query", "alice-hook"} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("the log names %s of the caller's URL or token: %s", secret, logs.String())
				}
			}
		})
	}
}

// TestPushRelayRevokedWhileReading: the caller's credential is checked
// again once the agent's push has been read, before it is delivered: an
// agent that starts a push while the caller's key holds and sends the
// rest of its body after the key is revoked delivers nothing.
func TestPushRelayRevokedWhileReading(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	task, url, token := relayOf(t, e, rec, "alice", hook.srv.URL+"/alice")
	checked := make(chan struct{}, 16)
	e.mu.Lock()
	e.checked = func(string) { checked <- struct{}{} }
	e.mu.Unlock()

	pr, pw := io.Pipe()
	done := pushFrom(url, token, pr, "application/json")
	body := taskPush(task, "working")
	io.WriteString(pw, body[:10])
	select {
	case <-checked: // the check before the body is read: the key held
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not check the caller's credential")
	}
	e.revoke("alice")
	io.WriteString(pw, body[10:])
	pw.Close()
	if status := <-done; status != http.StatusGone {
		t.Errorf("got HTTP %d, want 410", status)
	}
	if got := hook.next(100 * time.Millisecond); got != "" {
		t.Errorf("a push finished after the caller's key was revoked was delivered: %.200s", got)
	}
	if n := e.g.pushes.len(); n != 0 {
		t.Errorf("%d relays left after the caller's credential lapsed, want 0", n)
	}
}

// syncBuffer is a bytes.Buffer a logger and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttackPushRelayOneCallerHoldsDeliveries: a caller whose webhook
// never answers holds at most a quarter of PushDeliveries at once, not
// all of them: another caller's push is still delivered while hers wait
// out PushTimeout, and hers past her share are answered 503 at once.
func TestAttackPushRelayOneCallerHoldsDeliveries(t *testing.T) {
	slow, stop, arrived := stalledWebhook(t, 16)
	hook := newWebhook(t)
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{PushTimeout: 5 * time.Second, PushDeliveries: 4})
	t.Cleanup(func() { close(stop) }) // first: the gateway's Close waits for the pushes
	aliceTask, aliceURL, aliceTok := relayOf(t, e, rec, "alice", slow.URL+"/hook")
	bobTask, bobURL, bobTok := relayOf(t, e, rec, "bob", hook.srv.URL+"/bob")
	held := 0
	for range 4 {
		done := pushAsync(aliceURL, aliceTok, taskPush(aliceTask, "working"))
		select {
		case <-arrived:
			held++
		case status := <-done:
			if status != http.StatusServiceUnavailable {
				t.Errorf("alice's push past her share: HTTP %d, want 503", status)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("alice's push neither arrived nor was answered")
		}
	}
	if held != 1 {
		t.Errorf("alice's stalled webhook holds %d of 4 deliveries, want 1 (a quarter)", held)
	}
	if status, got := pushAs(t, bobURL, bobTok, taskPush(bobTask, "working")); status != http.StatusOK {
		t.Errorf("bob's push while alice's webhook stalls: HTTP %d %s, want 200", status, got)
	}
	// Only what is delivered is screened (OnResult): not the pushes
	// turned away.
	e.mu.Lock()
	screened := 0
	for _, r := range e.results {
		if strings.HasPrefix(r, "push alice ") {
			screened++
		}
	}
	e.mu.Unlock()
	if screened != held {
		t.Errorf("%d of alice's pushes screened, want the %d delivered", screened, held)
	}
}

// TestAttackPushRelayIntoGateway: a push config whose URL leads back to
// the gateway's own endpoints (its A2A or MCP routes, not the relay) with
// the caller's gateway credential as its authentication would let the
// agent call the gateway as the caller, with bodies of its choosing. A URL
// on public_url's host is refused when it is set; one reaching the
// gateway under another name is refused when the push arrives there
// (508: the gateway's deliveries are marked), and reaches no agent.
func TestAttackPushRelayIntoGateway(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1", "::1"}}, Options{})
	gw := e.url + "/a2a/stub"
	task := taskOf(t, do(t, "POST", gw, "alice", "", sendHi))
	const auth = `"authentication":{"schemes":["Bearer"],"credentials":"key-of-alice"}`
	got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"url":"`+strings.ToUpper(e.url)+`/a2a/stub",`+auth+`}}}`)
	if !strings.Contains(got, "the gateway itself") {
		t.Errorf("a push URL on public_url's host: %.300s, want refused", got)
	}

	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.url, "http://"))
	alias := "http://localhost:" + port + "/a2a/stub" // the gateway, by another name
	got = do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"url":"`+alias+`",`+auth+`}}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("set: %s", got)
	}
	rec.mu.Lock()
	last := rec.seen[len(rec.seen)-1]
	n := len(rec.seen)
	rec.mu.Unlock()
	relayURL, relayToken, ok := agentGotConfig(last)
	if !ok {
		t.Fatalf("the agent got %s; want a push config", last)
	}
	// The agent's push: a JSON-RPC call of its own, naming the task.
	push := `{"jsonrpc":"2.0","id":"` + task + `","kind":"task","method":"message/send","params":{"message":{"kind":"message","messageId":"x","role":"user","parts":[{"kind":"text","text":"INJECTED AS ALICE"}]}}}`
	status, answer := pushAs(t, relayURL, relayToken, push)
	rec.mu.Lock()
	injected := slices.ContainsFunc(rec.seen[n:], func(s string) bool { return strings.Contains(s, "INJECTED AS ALICE") })
	rec.mu.Unlock()
	if injected || status == http.StatusOK {
		t.Errorf("the agent's push, delivered to the gateway's own endpoint, reached an agent as alice (%v; the agent answered HTTP %d %s)", injected, status, answer)
	}
}

// TestAttackPushRelaysFilled: principals that fill the relays between
// them (each within its tenth) do not keep every other caller from
// registering one: when the relays are full, the principal holding the
// most gives up its oldest to one holding fewer, and a principal never
// loses one to another that would then hold as many.
func TestAttackPushRelaysFilled(t *testing.T) {
	p, add, _ := clockedRelays(20)
	var first *pushRecord
	for i := range 20 {
		r, err := add(fmt.Sprint("mallory", i%10))
		if err != nil {
			t.Fatalf("relay %d: %v", i, err)
		}
		if i == 0 {
			first = r
		}
	}
	alice, err := add("alice")
	if err != nil {
		t.Fatalf("alice's first relay with 10 principals holding 2 each: %v", err)
	}
	if p.get(first.id) != nil {
		t.Error("the oldest relay of a principal holding the most did not end for alice's")
	}
	if p.len() != 20 {
		t.Errorf("%d relays, want 20", p.len())
	}
	if _, err := add("alice"); err == nil {
		t.Error("alice's second relay taken from a principal that would then hold as many as she does")
	}
	if _, err := add("mallory0"); err == nil || p.get(alice.id) == nil {
		t.Errorf("mallory0, holding 1, took alice's only relay (err %v)", err)
	}
}

// TestPushDialControlAddresses: the address the relay's client connects
// to, whatever the URL spelt (a name, decimal or octal, brackets) and
// resolved to, is refused when it is in the gateway's network in any
// form: unspecified, IPv4-mapped, IPv4-compatible, NAT64 (well-known and
// local), 6to4, zoned link-local, metadata, CGNAT, ULA, multicast; and an
// allowed address is let through mapped as plain.
func TestPushDialControlAddresses(t *testing.T) {
	refuse := pushDialControl(nil)
	for _, a := range []string{"0.0.0.0:80", "[::]:80", "[::ffff:127.0.0.1]:80", "[::127.0.0.1]:80", "[64:ff9b::a00:1]:80",
		"[64:ff9b:1::a00:1]:80", "[2002:7f00:1::]:80", "[fe80::1%eth0]:80", "169.254.169.254:80", "[fd00:ec2::254]:80",
		"100.64.0.1:80", "[::1]:443", "127.1.2.3:80", "10.0.0.1:443", "192.168.1.1:80", "172.16.0.1:80", "192.0.0.170:80",
		"224.0.0.1:80", "[ff02::1]:80", "[::ffff:0:a00:1]:80"} {
		if err := refuse("tcp", a, nil); !errors.Is(err, errPushAddress) {
			t.Errorf("%s: got %v, want refused", a, err)
		}
	}
	for _, a := range []string{"93.184.216.34:443", "[2606:2800:220:1:248:1893:25c8:1946]:443"} {
		if err := refuse("tcp", a, nil); err != nil {
			t.Errorf("%s: got %v, want let through", a, err)
		}
	}
	allow := pushDialControl([]netip.Prefix{netip.MustParsePrefix("10.0.0.7/32")})
	if err := allow("tcp", "[::ffff:10.0.0.7]:80", nil); err != nil {
		t.Errorf("10.0.0.7, allowed, mapped: got %v, want let through", err)
	}
	if err := allow("tcp", "10.0.0.8:80", nil); err == nil {
		t.Error("10.0.0.8, beside the one allowed: let through")
	}
}

// TestPushClientNoProxyNoRedirect: the relay's client uses no proxy (one
// the environment names would connect for it, past the dial check; a
// check of the transport, since net/http never proxies the loopback
// hosts a test can use) and follows no redirect (a webhook's 3xx is its
// answer, the Location not fetched).
func TestPushClientNoProxyNoRedirect(t *testing.T) {
	reached := make(chan string, 4)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- "redirect target" }))
	t.Cleanup(target.Close)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(hook.Close)
	c := pushClient([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, 5*time.Second)
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Error("the relay's client may use a proxy")
	}
	req, _ := http.NewRequest(http.MethodPost, hook.URL+"/hook", strings.NewReader(`{}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("got HTTP %d, want the webhook's 307", resp.StatusCode)
	}
	select {
	case r := <-reached:
		t.Errorf("the push reached the %s", r)
	default:
	}
}

// TestAttackPushRelaysAnonymous: with the relay on and no auth: (every
// caller the same principal, none), the bounds count each client
// address as they would a principal: one client registering relays
// without end ends its own oldest, never another client's, and holds no
// more than its share of the deliveries.
func TestAttackPushRelaysAnonymous(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL}, Options{MaxPushRelays: 20, PushDeliveries: 4})
	a := e.g.agents["stub"]
	register := func(addr string) *pushRecord {
		t.Helper()
		m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"url":"https://93.184.216.34/hook"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, r, err := e.g.relayMessage(intercept.WithClientAddr(context.Background(), addr), a, m, "", "t")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first, second := register("192.0.2.1"), register("192.0.2.1")
	var last *pushRecord
	for range 5 {
		last = register("198.51.100.7")
	}
	if e.g.pushes.get(first.id) == nil || e.g.pushes.get(second.id) == nil {
		t.Error("another client's registrations ended 192.0.2.1's relays")
	}
	if e.g.pushes.get(last.id) == nil || e.g.pushes.len() != 4 {
		t.Errorf("%d relays, want 4 (two per client, a tenth of 20 each)", e.g.pushes.len())
	}
	if err := e.g.delivering.start(first.share); err != nil {
		t.Fatal(err)
	}
	defer e.g.delivering.end(first.share)
	if err := e.g.delivering.start(last.share); err != nil {
		t.Errorf("a delivery for one client while another's is under way: %v", err)
	} else {
		e.g.delivering.end(last.share)
	}
}

// TestPushRelayLogsClient: a refused push is logged with the client it
// came from, behind trusted_proxies the one they forward for, not the
// proxy's address.
func TestPushRelayLogsClient(t *testing.T) {
	var logs syncBuffer
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	task, url, _ := relayOf(t, e, rec, "alice", "http://127.0.0.1:9/alice")
	if status, _ := pushAs(t, url, "wrong", taskPush(task, "working"), "X-Test-Client", "203.0.113.9"); status != http.StatusUnauthorized {
		t.Fatalf("got HTTP %d, want 401", status)
	}
	if !strings.Contains(logs.String(), "remote=203.0.113.9") {
		t.Errorf("the refusal's log does not name the client 203.0.113.9: %s", logs.String())
	}
}

// TestAttackPushRelayBindsOthersTask: a relay registered with a message
// is bound to the task the agent's answer names only if that task is the
// caller's, as a first push binds it: an agent answering alice's message
// with bob's task does not get alice's relay bound to bob's task, and
// its pushes of bob's task through it are not delivered to alice.
func TestAttackPushRelayBindsOthersTask(t *testing.T) {
	var mu sync.Mutex
	var relayURL, relayTok string
	var agent *httptest.Server
	agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", agent.URL))
			return
		}
		var req struct {
			ID     jsontext.Value `json:"id"`
			Params struct {
				Configuration struct {
					Push struct {
						URL   string `json:"url"`
						Token string `json:"token"`
					} `json:"pushNotificationConfig"`
				} `json:"configuration"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req, json.RejectUnknownMembers(false))
		if req.Params.Configuration.Push.URL != "" {
			mu.Lock()
			relayURL, relayTok = req.Params.Configuration.Push.URL, req.Params.Configuration.Push.Token
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		// Every message answered with the one task, bob's.
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"bob-task","contextId":"c-%d","status":{"state":"working"}}}`, req.ID, time.Now().UnixNano())
	}))
	t.Cleanup(agent.Close)
	hook := newWebhook(t)
	e := newRelayEnv(t, Agent{URL: agent.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	gw := e.url + "/a2a/stub"
	if task := taskOf(t, do(t, "POST", gw, "bob", "", sendHi)); task != "bob-task" {
		t.Fatalf("bob's task %q", task)
	}
	do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{`+msgHi+`,"configuration":{"blocking":false,"pushNotificationConfig":{"url":"`+hook.srv.URL+`/alice","token":"alice-hook"}}}}`)
	mu.Lock()
	url, tok := relayURL, relayTok
	mu.Unlock()
	if url == "" {
		t.Fatal("the agent got no relay")
	}
	if status, got := pushAs(t, url, tok, taskPush("bob-task", "working")); status == http.StatusOK {
		t.Errorf("bob's task through alice's relay: HTTP %d %s, want refused", status, got)
	}
	if got := hook.next(100 * time.Millisecond); got != "" {
		t.Errorf("alice's webhook got bob's task: %.200s", got)
	}
}

// pushAsync sends an agent's push to a relay url with token, and says
// its status when answered (0 if the request failed).
func pushAsync(url, token, body string) <-chan int {
	return pushFrom(url, token, strings.NewReader(body), "")
}

// pushFrom is pushAsync of a body read from r (a pipe, for a body sent
// late), sent as contentType when it is not "".
func pushFrom(url, token string, r io.Reader, contentType string) <-chan int {
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, r)
		req.Header.Set("X-A2A-Notification-Token", token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	return done
}

// TestPushRelayKeepsContentType: a push reaches the caller's webhook with
// the JSON media type the agent sent it as (@a2a-js/sdk's sender posts a
// 1.0 StreamResponse as application/a2a+json, a2a-go's as
// application/json); anything else the agent names (a form, text,
// nothing) is delivered as application/json, the only kind the relay
// passes. Before, every push was application/json: a webhook that reads
// application/a2a+json as A2A 1.0 took a 1.0 push for something else.
func TestPushRelayKeepsContentType(t *testing.T) {
	hook := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook <- r.Header.Get("Content-Type")
	}))
	t.Cleanup(srv.Close)
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	task := taskOf(t, do(t, "POST", e.url+"/a2a/stub", "alice", "", sendHi))
	r := &pushRecord{id: randomID(16), token: randomID(32), agent: "stub", owner: "alice", task: task, url: srv.URL, callerTok: "alice-hook"}
	if err := e.g.pushes.add(r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sent, want string }{
		{"application/a2a+json", "application/a2a+json"},
		{"application/json; charset=utf-8", "application/json; charset=utf-8"},
		{"Application/A2A+JSON", "application/a2a+json"},
		{"application/a2a+json; version=1.0; charset=utf-8", "application/a2a+json; charset=utf-8"},
		{"application/json", "application/json"},
		{"", "application/json"},
		{"text/html", "application/json"},
		{"application/x-www-form-urlencoded", "application/json"},
		{"application/vnd.evil+json", "application/json"},
	} {
		status, got := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"`+task+`","status":{"state":"TASK_STATE_WORKING"}}}`, "Content-Type", c.sent)
		if status != http.StatusOK {
			t.Fatalf("push sent as %q: HTTP %d %s", c.sent, status, got)
		}
		if ct := <-hook; ct != c.want {
			t.Errorf("push sent as %q reached the webhook as %q, want %q", c.sent, ct, c.want)
		}
	}
}

// TestPushAuthorization: the Authorization header a delivery carries for a
// push config's authentication. A2A 1.0's scheme is an HTTP
// authentication scheme (Bearer, Basic, Digest, any in IANA's registry),
// written as @a2a-js/sdk's sender writes it, "scheme credentials"; of
// 0.3's schemes, Bearer or Basic when listed (a2a-go's sender takes only
// those), else the first that is an HTTP scheme (the SDK's compat layer
// keeps the first). Before, any scheme other than Bearer or Basic was
// dropped, and the caller's webhook got no credential from the relay where
// the SDK's sender, pushing straight to it, sent one.
func TestPushAuthorization(t *testing.T) {
	for _, c := range []struct{ auth, want string }{
		{`{"scheme":"Bearer","credentials":"s"}`, "Bearer s"},
		{`{"scheme":"bearer","credentials":"s"}`, "Bearer s"},
		{`{"scheme":"Basic","credentials":"YTpi"}`, "Basic YTpi"},
		{`{"scheme":"Digest","credentials":"username=\"a\""}`, `Digest username="a"`},
		{`{"scheme":"ApiKey","credentials":"k1"}`, "ApiKey k1"},
		{`{"schemes":["Bearer"],"credentials":"s"}`, "Bearer s"},
		{`{"schemes":["oauth2","basic"],"credentials":"YTpi"}`, "Basic YTpi"},
		{`{"schemes":["ApiKey"],"credentials":"k1"}`, "ApiKey k1"},
		{`{"schemes":["ApiKey","Bearer"],"credentials":"k1"}`, "Bearer k1"},
		{`{"schemes":["not a scheme","ApiKey"],"credentials":"k1"}`, "ApiKey k1"},
		{`{"schemes":[],"credentials":"k1"}`, ""},
		{`{"scheme":"","credentials":"s"}`, ""},
		{`{"scheme":"Bearer","credentials":""}`, ""},
		{`{"scheme":"Bearer","credentials":"s\r\nX-Injected: 1"}`, ""},
		{`{"scheme":"Bearer x","credentials":"s"}`, ""},
		{`{"scheme":"X:Y","credentials":"s"}`, ""},
		{`{"scheme":"Bé","credentials":"s"}`, ""},
	} {
		if got := authorization(jsontext.Value(c.auth)); got != c.want {
			t.Errorf("authentication %s: got %q, want %q", c.auth, got, c.want)
		}
	}
}

// agentGotConfig reads the push config's url and token from a request
// the recording agent saw ("POST path body").
func agentGotConfig(seen string) (url, token string, ok bool) {
	var req struct {
		Params struct {
			Config struct {
				URL   string `json:"url"`
				Token string `json:"token"`
			} `json:"pushNotificationConfig"`
		} `json:"params"`
	}
	_, body, _ := strings.Cut(strings.TrimPrefix(seen, "POST "), " ")
	if err := json.Unmarshal([]byte(body), &req, json.RejectUnknownMembers(false)); err != nil {
		return "", "", false
	}
	return req.Params.Config.URL, req.Params.Config.Token, true
}

// stalledWebhook is a caller's webhook that never answers: arrived (of
// room n) hears of each push that reached it, and closing stop lets
// them all go. A test closes stop in a cleanup registered after its
// gateway's, so that it runs first: the gateway's Close waits for its
// pushes.
func stalledWebhook(t *testing.T, n int) (slow *httptest.Server, stop chan struct{}, arrived chan struct{}) {
	stop, arrived = make(chan struct{}), make(chan struct{}, n)
	slow = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	return slow, stop, arrived
}

// clockedRelays is newPushRelays(max, time.Hour) on a clock of the
// test's: add registers a relay for owner a second after the last, and
// advance moves the clock on.
func clockedRelays(max int) (p *pushRelays, add func(owner string) (*pushRecord, error), advance func(time.Duration)) {
	now := time.Unix(0, 0)
	p = newPushRelays(max, time.Hour)
	p.now = func() time.Time { return now }
	add = func(owner string) (*pushRecord, error) {
		r := &pushRecord{id: randomID(16), owner: owner, share: owner}
		now = now.Add(time.Second)
		return r, p.add(r)
	}
	return p, add, func(d time.Duration) { now = now.Add(d) }
}

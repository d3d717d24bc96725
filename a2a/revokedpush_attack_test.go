package a2a

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/a2asrv/push"
	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRevokedAgentPushed: an agent whose credential stopped holding
// (an API key revoked) no longer gets a stream's events or an answer
// through the gateway (TestAttackRevokedAgentStreamsOn,
// TestAttackRevokedAgentAnswered), but a push notification config it had
// registered while its key held went on working: the A2A agent (a2a-go's
// server, with its HTTP push sender) POSTs each update of the task, its
// artifacts and messages, straight to the webhook the caller named — past
// the gateway, which cannot stop it once the credential goes. Now a push
// config is not registered for a caller whose credential can stop holding
// (message/send's configuration, tasks/pushNotificationConfig/set): the
// request is refused with -32003 (PushNotificationNotSupported) saying
// why, and the caller polls or subscribes through the gateway instead.
func TestAttackRevokedAgentPushed(t *testing.T) {
	for _, c := range []struct {
		name string
		// register has alice register hook for pushes of a task of hers
		// through gw, and returns the gateway's answer to it.
		register func(t *testing.T, gw, hook string) string
	}{
		{"message/send configuration", func(t *testing.T, gw, hook string) string {
			return do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"`+hook+`","token":"alice-hook"}}}}`)
		}},
		{"tasks/pushNotificationConfig/set", func(t *testing.T, gw, hook string) string {
			var task struct {
				Result struct {
					ID string `json:"id"`
				} `json:"result"`
			}
			got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`)
			if err := json.Unmarshal([]byte(got), &task, json.RejectUnknownMembers(false)); err != nil || task.Result.ID == "" {
				t.Fatalf("alice's task: %s", got)
			}
			return do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task.Result.ID+`","pushNotificationConfig":{"id":"cfg","url":"`+hook+`","token":"alice-hook"}}}`)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pushed := make(chan string, 16)
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				select {
				case pushed <- string(b):
				default:
				}
			}))
			t.Cleanup(hook.Close)
			release := make(chan struct{})
			tasks := &memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}
			configs := push.NewInMemoryStore()
			h := a2asrv.NewHandler(worksUntil{release}, a2asrv.WithTaskStore(tasks),
				a2asrv.WithPushNotifications(configs, push.NewHTTPPushSender(nil)))
			agent := serveA2AGo(t, goodCard, h)
			var revoked atomic.Bool
			gw := revocableGateway(t, agent.URL, &revoked, Options{AllowPrivatePushURLs: true})

			answer := c.register(t, gw, hook.URL+"/alice")
			// Alice's key is revoked, and then the agent finishes her task.
			revoked.Store(true)
			close(release)
			registered := false
			tasks.mu.Lock()
			for id := range tasks.m {
				if cs, _ := configs.List(context.Background(), id); len(cs) > 0 {
					registered = true
				}
			}
			tasks.mu.Unlock()
			if !registered {
				if !strings.Contains(answer, "-32003") || !strings.Contains(answer, "credential") {
					t.Errorf("registration refused with %.300s; want -32003 saying why", answer)
				}
				return
			}
			timeout := time.After(10 * time.Second)
			for {
				select {
				case got := <-pushed:
					if strings.Contains(got, "SECRET-AFTER-REVOCATION") {
						t.Fatalf("after alice's key was revoked the agent pushed her task's result to her webhook: %.300s (registered through the gateway: %.200s)", got, answer)
					}
				case <-timeout:
					t.Fatalf("a push config registered through the gateway (%.200s) by a caller whose key was then revoked: want it refused", answer)
				}
			}
		})
	}
}

// worksUntil is an agent that starts a task, works on it until release
// is closed, and completes it with a secret.
type worksUntil struct{ release <-chan struct{} }

func (a worksUntil) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	select {
	case <-a.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateCompleted,
		a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, a2ago.TextPart{Text: "SECRET-AFTER-REVOCATION"}))
	ev.Final = true
	return q.Write(ctx, ev)
}

func (worksUntil) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return nil
}

// TestPushConfigRefusedForLapsingCredential: every way of registering a
// push config (TestAttackRevokedAgentPushed's two in 0.3, and 1.0's, on
// JSON-RPC and REST) is refused for a caller whose credential can stop
// holding, and never reaches the agent; reading and deleting configs
// still does.
func TestPushConfigRefusedForLapsingCredential(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	var revoked atomic.Bool
	gw := revocableGateway(t, agent.URL, &revoked, Options{})
	if got := do(t, "POST", gw, "alice", "", sendHi); !strings.Contains(got, `"t1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	const hook = `"url":"https://93.184.216.34/hook","token":"alice-hook"`
	const msg03 = `"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	const msg10 = `"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	for _, c := range []struct {
		name, path, version, body string
		refused                   bool
	}{
		{"0.3 message/stream configuration", "", "", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{` + msg03 + `,"configuration":{"pushNotificationConfig":{` + hook + `}}}}`, true},
		{"0.3 snake case configuration", "", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{` + msg03 + `,"configuration":{"push_notification_config":{` + hook + `}}}}`, true},
		{"1.0 SendMessage configuration", "", "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{` + msg10 + `,"configuration":{"pushNotificationConfig":{` + hook + `}}}}`, true},
		{"1.0 CreateTaskPushNotificationConfig", "", "1.0", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t1",` + hook + `}}`, true},
		{"REST message:send configuration", "/rest/message:send", "1.0", `{` + msg10 + `,"configuration":{"pushNotificationConfig":{` + hook + `}}}`, true},
		{"REST create", "/rest/tasks/t1/pushNotificationConfigs", "1.0", `{` + hook + `}`, true},
		{"0.3 list", "", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/list","params":{"id":"t1"}}`, false},
		{"0.3 delete", "", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"t1","pushNotificationConfigId":"cfg"}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := posts.Load()
			got := do(t, "POST", gw+c.path, "alice", c.version, c.body)
			sent := posts.Load() != before
			switch {
			case c.refused && sent:
				t.Errorf("the agent got the push config of a caller whose credential can stop holding (answer %.300s)", got)
			case c.refused && !strings.Contains(got, "-32003") && !strings.Contains(got, "PUSH_NOTIFICATION_NOT_SUPPORTED"):
				t.Errorf("got %.300s, want PushNotificationNotSupported", got)
			case !c.refused && !sent:
				t.Errorf("got %.300s, want it sent to the agent", got)
			}
		})
	}
}

// TestCardSaysPushRefused: where callers' credentials can lapse, their
// push configs are refused, and the card the gateway serves (and signs)
// says so rather than advertising what the agent offers, on both
// versions' card paths; without auth: the agent's word stands.
func TestCardSaysPushRefused(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","capabilities":{"pushNotifications":true,"streaming":true},"skills":[{"id":"echo","description":"Echo."}]}`)
	for _, lapse := range []bool{true, false} {
		gw := serveAs(t, &intercept.StaticDecider{}, rec.srv.URL, Options{CredentialsLapse: lapse})
		for _, path := range []string{"/a2a/stub/.well-known/agent-card.json", "/a2a/stub/.well-known/agent.json"} {
			got := do(t, "GET", gw.URL+path, "", "", "")
			want := `"pushNotifications":` + strconv.FormatBool(!lapse)
			if !strings.Contains(got, want) || !strings.Contains(got, `"streaming":true`) {
				t.Errorf("credentials lapse %v, %s: %s; want %s and streaming kept", lapse, path, got, want)
			}
		}
	}
}

// TestAttackUnknownMethodRegistersPush: with AllowUnknownMethods the
// gateway forwards methods it does not know, decided as a message; many
// agents register a push config under names the gateway's table lacks
// (1.0 drafts' SetTaskPushNotificationConfig, a .../create alias, a
// method name in another case), and such a config reached the agent for
// a caller whose credential can stop holding.
func TestAttackUnknownMethodRegistersPush(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	var revoked atomic.Bool
	gw := revocableGateway(t, agent.URL, &revoked, Options{AllowUnknownMethods: true})
	if got := do(t, "POST", gw, "alice", "", sendHi); !strings.Contains(got, `"t1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	const hook = `"url":"https://93.184.216.34/hook","token":"alice-hook"`
	for _, c := range []struct{ name, version, body string }{
		{"SetTaskPushNotificationConfig", "1.0", `{"jsonrpc":"2.0","id":1,"method":"SetTaskPushNotificationConfig","params":{"taskId":"t1","pushNotificationConfig":{` + hook + `}}}`},
		{"create alias", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/create","params":{"taskId":"t1","pushNotificationConfig":{` + hook + `}}}`},
		{"case variant", "", `{"jsonrpc":"2.0","id":1,"method":"Tasks/PushNotificationConfig/Set","params":{"taskId":"t1","pushNotificationConfig":{` + hook + `}}}`},
		{"url only", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/notify","params":{"taskId":"t1",` + hook + `}}`},
		// A URL without "//", which WHATWG parsers (Node's, browsers')
		// read as https://evil.example/hook, under a name the gateway
		// does not look for.
		{"url without slashes", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/notify","params":{"taskId":"t1","endpoint":"https:evil.example/hook"}}`},
		{"url without slashes, odd case and a tab", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/notify","params":{"taskId":"t1","endpoint":" HT\ttPs:evil.example/hook"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := posts.Load()
			got := do(t, "POST", gw, "alice", c.version, c.body)
			if posts.Load() != before {
				t.Errorf("the agent got the push config of a caller whose credential can stop holding (answer %.300s)", got)
			} else if !strings.Contains(got, "-32003") {
				t.Errorf("got %.300s, want PushNotificationNotSupported", got)
			}
		})
	}
	// A method that registers nothing still goes through.
	before := posts.Load()
	if got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/custom","params":{"taskId":"t1"}}`); posts.Load() == before {
		t.Errorf("an unknown method registering no push config was not forwarded: %.300s", got)
	}
}

// TestAttackUnknownMethodPrivatePushURL: without auth: push configs are
// allowed, but their URLs may not name the gateway's network; a push
// config under a method the gateway does not know (AllowUnknownMethods)
// skipped that check, and the agent was told to POST into a private
// address.
func TestAttackUnknownMethodPrivatePushURL(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	gw := serveAs(t, allow, agent.URL, Options{AllowUnknownMethods: true})
	// Her task: an unknown method naming another's, or none, is refused.
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", sendHi); !strings.Contains(got, `"t1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	set := func(url string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SetTaskPushNotificationConfig","params":{"taskId":"t1","pushNotificationConfig":{"url":"` + url + `"}}}`
	}
	before := posts.Load()
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", set("http://10.1.2.3/hook")); posts.Load() != before || !strings.Contains(got, "private") {
		t.Errorf("a push URL into a private network under an unknown method: %.300s (agent posts %d → %d), want refused", got, before, posts.Load())
	}
	// Under another name than url, and spelt as WHATWG parsers still
	// read as http://10.1.2.3/hook.
	for _, endpoint := range []string{`http://10.1.2.3/hook`, `HTTP:10.1.2.3/hook`, `https:\\\\10.1.2.3\\hook`, ` http://10.1.2.3/hook`} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/notify","params":{"taskId":"t1","endpoint":"` + endpoint + `"}}`
		if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", body); posts.Load() != before {
			t.Errorf("endpoint %s under an unknown method reached the agent: %.300s", endpoint, got)
		}
	}
	if do(t, "POST", gw.URL+"/a2a/stub", "alice", "", set("https://93.184.216.34/hook")); posts.Load() == before {
		t.Error("a public push URL under an unknown method was not forwarded")
	}
	for _, text := range []string{"see http://10.1.2.3/wiki for details", "HTTPS: required", "http:"} {
		before = posts.Load()
		if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/notify","params":{"taskId":"t1","note":"`+text+`"}}`); posts.Load() == before {
			t.Errorf("an unknown method whose text is %q was refused: %.300s", text, got)
		}
	}
}

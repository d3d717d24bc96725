package a2a

import (
	"regexp"
	"strings"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/push"
)

// TestAttackPushConfigIDOfOthers03: in A2A 0.3 only
// tasks/pushNotificationConfig/set names its task by taskId; get, list
// and delete name it by params.id (GetTaskPushNotificationConfigParams,
// a TaskIdParams), as a2a-go and @a2a-js/sdk read it. The gateway took
// id for a config id whenever taskId was there too, so bob named his own
// task in taskId and alice's in id: the a2a-go agent listed alice's push
// configuration (her webhook and its token) to him, and deleted it.
func TestAttackPushConfigIDOfOthers03(t *testing.T) {
	store := &memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}
	h := a2asrv.NewHandler(relatedEcho{}, a2asrv.WithTaskStore(store),
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)))
	agent := serveA2AGo(t, goodCard, h)
	gw := serveAs(t, allow, agent.URL, Options{AllowPrivatePushURLs: true})

	taskOf := func(who string) string {
		got := do(t, "POST", gw.URL+"/a2a/stub", who, "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-`+who+`","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
		m := regexp.MustCompile(`"kind":"task".*?"id":"([^"]+)"|"id":"([^"]+)"[^{}]*"kind":"task"`).FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("%s's task: %s", who, got)
		}
		return m[1] + m[2]
	}
	alice, bob := taskOf("alice"), taskOf("bob")
	set := `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + alice + `","pushNotificationConfig":{"id":"cfg","url":"http://127.0.0.1:9/alice-hook","token":"alice-secret-token"}}}`
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", set); !strings.Contains(got, "alice-secret-token") {
		t.Fatalf("alice's push config: %s", got)
	}
	for _, c := range []struct{ method, extra string }{
		{"tasks/pushNotificationConfig/list", ``},
		{"tasks/pushNotificationConfig/get", `,"pushNotificationConfigId":"cfg"`},
		{"tasks/pushNotificationConfig/delete", `,"pushNotificationConfigId":"cfg"`},
	} {
		body := `{"jsonrpc":"2.0","id":3,"method":"` + c.method + `","params":{"id":"` + alice + `","taskId":"` + bob + `"` + c.extra + `}}`
		if got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", body); !strings.Contains(got, "task not found") {
			t.Errorf("%s naming bob's task in taskId and alice's in id: %s, want task not found", c.method, got)
		}
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":4,"method":"tasks/pushNotificationConfig/list","params":{"id":"`+alice+`"}}`)
	if !strings.Contains(got, "alice-secret-token") {
		t.Errorf("alice's own push config is gone (bob deleted it?): %s", got)
	}
}

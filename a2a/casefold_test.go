package a2a

import (
	stdjson "encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// goAgent is an A2A agent written in Go the usual way (a2a-go binds its
// requests with encoding/json): member names are matched to fields case-
// insensitively and the last match wins.
func newGoAgent(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var n int
	var tasksRead []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		var req struct {
			ID     stdjson.RawMessage `json:"id"`
			Method string             `json:"method"`
			Params struct {
				ID      string `json:"id"`
				Message struct {
					TaskID    string `json:"taskId"`
					ContextID string `json:"contextId"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = stdjson.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch req.Method {
		case "message/send":
			task := req.Params.Message.TaskID
			if task == "" {
				n++
				task = fmt.Sprintf("t-%d", n)
			} else {
				tasksRead = append(tasksRead, task)
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":%q,"contextId":"c-%s","status":{"state":"completed"}}}`, req.ID, task, task)
		case "tasks/get":
			tasksRead = append(tasksRead, req.Params.ID)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":%q,"status":{"state":"completed"}}}`, req.ID, req.Params.ID)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), tasksRead...) }
}

// TestTaskIDCaseVariant: the task-ownership checks read taskId,
// task_id and id exactly; a Go agent (encoding/json) also reads TaskID,
// taskID, ID... Bob reaches alice's task t-1 by spelling the member in
// another case.
func TestTaskIDCaseVariant(t *testing.T) {
	agent, read := newGoAgent(t)
	gw := serveAs(t, allow, agent.URL, Options{})
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", sendHi); !strings.Contains(got, `"t-1"`) {
		t.Fatalf("alice's task: %s", got)
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", sendHi); !strings.Contains(got, `"t-2"`) {
		t.Fatalf("bob's task: %s", got)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","taskID":"t-1","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-2","ID":"t-1"}}`,
	} {
		do(t, "POST", gw.URL+"/a2a/stub", "bob", "", body)
	}
	for _, id := range read() {
		if id == "t-1" {
			t.Errorf("bob reached alice's task t-1 through a case variant; the agent read tasks %q", read())
			break
		}
	}
}

package a2a

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestAttackUnreadableRewrittenAnswer (found by an attacker review): an
// answer the gateway rewrites before the client has it (an extended card
// pointed at the gateway, a task list holding only the caller's tasks) was
// passed on as the agent sent it when the gateway could not decode it. A
// UTF-8 BOM before the JSON is enough: Go's decoders refuse it, fetch's
// response.json() and Python's json.loads(bytes) skip it. The client got
// the agent's own address (and talked to it around the gateway) or every
// principal's tasks.
func TestAttackUnreadableRewrittenAnswer(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		card := strings.ReplaceAll(goodCard, "BASE", srv.URL)
		if r.Method == http.MethodGet {
			io.WriteString(w, card)
			return
		}
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		id, _ := json.Marshal(req.ID)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "\xEF\xBB\xBF")
		switch req.Method {
		case "agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, card)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tasks":[{"id":"alices-task","contextId":"c"}]}}`, id)
		}
	}))
	t.Cleanup(srv.Close)
	gw := serveAs(t, allow, srv.URL, Options{})
	for _, c := range []struct{ name, version, body, leak string }{
		{"0.3 extended card", "", `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard","params":{}}`, srv.URL},
		{"1.0 extended card", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`, srv.URL},
		{"1.0 task list", "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, "alices-task"},
	} {
		got := strings.TrimPrefix(do(t, "POST", gw.URL+"/a2a/stub", "bob", c.version, c.body), "\xEF\xBB\xBF")
		if strings.Contains(got, c.leak) || !strings.Contains(got, `"error"`) {
			t.Errorf("%s: bob got %s, want a JSON-RPC error and no %q", c.name, got, c.leak)
		}
	}
}

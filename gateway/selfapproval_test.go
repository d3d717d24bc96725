package gateway

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// testClock is a clock tests move by hand; safe for concurrent use.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var approvalIDPattern = regexp.MustCompile(`apr_[0-9a-f]+`)

// selfApproval is a client answering the gateway's approval question it
// was never asked: the retry carries inputResponses for the gateway's key
// and the approval id from the approval_required envelope as requestState.
func selfApproval(id int, approvalID string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}` +
		answerParams("accept", approvalID) + `}}`
}

// wsHeld opens a 2025-11-25 session over /ws/demo and sends the held add
// call, returning the connection and the approval id it was held under.
func wsHeld(t *testing.T, f *fixture) (*connClient, string) {
	t.Helper()
	c := dialConn(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/demo"})
	held := c.rpc(t, addCall, "7")
	id := approvalIDPattern.FindString(string(held.Raw))
	if id == "" || !strings.Contains(string(held.Raw), "approval_required") {
		t.Fatalf("add over /ws: got %s, want approval_required with an id", held.Raw)
	}
	return c, id
}

// TestNoSelfApproval: an agent cannot approve its own held call by
// answering a question the gateway did not ask it: not on a gateway where
// only the operator answers (no Approver), and not, where clients may
// answer, by sending inputResponses in a 2025-era session or without the
// sealed state of a question asked. The answer is refused with an error,
// the request stays pending and nothing reaches the upstream.
func TestNoSelfApproval(t *testing.T) {
	refused := func(t *testing.T, f *fixture, store *approval.Store, body string) {
		t.Helper()
		if errorCode(t, body) != intercept.CodeInvalidParams || !strings.Contains(body, "inputResponses") {
			t.Errorf("self-approval: got %s, want an invalid-params error about inputResponses", body)
		}
		if f.upstreamSaw(`"name":"add"`) {
			t.Errorf("the held call reached the upstream")
		}
		for _, r := range store.List() {
			if r.Status != approval.Pending {
				t.Errorf("request %s: got %s, want pending", r.ID, r.Status)
			}
		}
	}
	for _, clientMayAnswer := range []bool{false, true} {
		name := map[bool]string{false: "operator only", true: "clients may answer"}[clientMayAnswer]
		t.Run(name+"/2026 stateless", func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, !clientMayAnswer)
			// Declaring elicitation or not: the bare id answers nothing.
			_, _, held := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCall(1, "add", `{"a":2,"b":3}`))
			id := approvalIDPattern.FindString(held)
			if id == "" {
				t.Fatalf("held: got %s, want an approval id", held)
			}
			_, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"),
				modernCallWith(2, `{"a":2,"b":3}`, `{"elicitation":{}}`, "test", answerParams("accept", id)))
			refused(t, f, store, body)
		})
		t.Run(name+"/websocket 2025 session", func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, !clientMayAnswer)
			c, id := wsHeld(t, f)
			refused(t, f, store, string(c.rpc(t, selfApproval(8, id), "8").Raw))
		})
		t.Run(name+"/http 2025 session", func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, !clientMayAnswer)
			hdr := initializeWith(t, f.gw.URL+"/mcp/demo", `{}`)
			_, _, held := post(t, f.gw.URL+"/mcp/demo", hdr, addCall)
			_, _, body := post(t, f.gw.URL+"/mcp/demo", hdr, selfApproval(8, approvalIDPattern.FindString(held)))
			refused(t, f, store, body)
		})
	}
}

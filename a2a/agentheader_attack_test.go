package a2a

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAgentHeaderTwice (attacker review): the MCP routes refuse a
// request whose agent header appears twice (a proxy in front that names
// the agent by appending its header after the client's own would
// otherwise be read as the client says) and, with agent_header_required,
// one without it. The A2A routes took the first value, whatever came
// after, and decided a request without the header as the unnamed agent:
// agent mallory, named by the proxy after the client's "X-Agent: alice",
// was decided as alice.
func TestAttackAgentHeaderTwice(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}]}`)
	var mu sync.Mutex
	var agents []string
	dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		mu.Lock()
		agents = append(agents, d.Agent)
		mu.Unlock()
		if d.Agent == "alice" {
			return intercept.Decision{Verdict: intercept.Allow, Reason: "alice may"}, nil
		}
		return intercept.Decision{Verdict: intercept.Deny, Reason: "others may not"}, nil
	})
	gw := serveAs(t, dec, rec.srv.URL, Options{AgentHeader: "X-Agent", AgentHeaderRequired: true})
	post := func(body string, values ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/a2a/stub", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, v := range values {
			req.Header.Add("X-Agent", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, got := post(sendHi, "alice", "mallory"); rec.saw("message/send") {
		t.Errorf("a request naming two agents was decided as %v and reached the agent: %s", agents, got)
	}
	if _, got := post(sendHi); rec.saw("message/send") || !strings.Contains(got, "X-Agent") {
		t.Errorf("a request without the required header: %s (decided as %q)", got, agents)
	}
	// A follow-up too.
	if _, got := post(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t-1","historyLength":3}}`, "alice", "mallory"); rec.saw("tasks/get") {
		t.Errorf("a follow-up naming two agents reached the agent: %s", got)
	}
	if _, got := post(sendHi, "alice"); !strings.Contains(got, "completed") {
		t.Errorf("alice, named once: %s", got)
	}
}

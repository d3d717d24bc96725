package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackApprovedRetryOtherState: a 2026-07-28 upstream that asks
// before each run of deploy issues the agent a fresh requestState each
// time; policy holds the answers. The operator approves the retry
// answering the round of state st-1; the agent then sends the approved
// call — same arguments, same answers — with st-2, a state the upstream
// issued it for the same call in another round (so the interceptor lets
// it through as its own). The upstream acts on st-2 with answers approved
// for st-1: the call must be held anew, not sent. Before, the approval
// bound the call without its state and sent it. Through a route and a
// virtual server; and where the client's user approves (the gateway's
// own question carries the held call's state back in its sealed state),
// the approved call still runs, with its state.
func TestAttackApprovedRetryOtherState(t *testing.T) {
	for _, virtual := range []bool{false, true} {
		for _, userAnswers := range []bool{false, true} {
			name := map[bool]string{false: "route", true: "virtual server"}[virtual] + map[bool]string{false: "", true: "/user approves"}[userAnswers]
			t.Run(name, func(t *testing.T) { testApprovedRetryOtherState(t, virtual, userAnswers) })
		}
	}
}

func testApprovedRetryOtherState(t *testing.T, virtual, userAnswers bool) {
	var mu sync.Mutex
	var issued int
	var ran []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		w.Header().Set("Content-Type", "application/json")
		if m.Method == "tools/list" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[{"name":"deploy","inputSchema":{"type":"object"}}]}}`)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if m.Params.RequestState == "" {
			issued++
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Deploy?","requestedSchema":{"type":"object"}}}},"requestState":"st-`+strconv.Itoa(issued)+`"}}`)
			return
		}
		ran = append(ran, m.Params.RequestState)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","content":[{"type":"text","text":"deployed"}]}}`)
	}))
	t.Cleanup(up.Close)
	store := approval.NewStore(approval.Options{})
	holdAnswers := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if bytes.Contains(d.CallExtra, []byte(`"params.inputResponses"`)) {
			return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "answers_need_approval", PublicReason: "answers need approval", Mode: intercept.ModeToolResult}, nil
		}
		return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed", Mode: intercept.ModeToolResult}, nil
	})
	opts, path, tool := Options{Upstreams: []Upstream{{Name: "deployer", URL: up.URL}}}, "/mcp/deployer", "deploy"
	caps := `{}`
	if userAnswers {
		opts.Approver, caps = store, `{"elicitation":{}}`
	}
	if virtual {
		opts.VirtualServers, path, tool = []VirtualServer{{Naming: NamingPrefix}}, "/mcp", "deployer_deploy"
	}
	g, err := New(opts, &intercept.Interceptor{Decider: &approval.Gate{Next: holdAnswers, Store: store}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url, hdr := gw.URL+path, modernHeaders("tools/call", tool)
	deploy := func(id int, extra string) string {
		return strings.Replace(modernCallWith(id, `{"env":"prod"}`, caps, "agent-a", extra), `"name":"add"`, `"name":"`+tool+`"`, 1)
	}
	for i := 1; i <= 2; i++ {
		if _, _, body := post(t, url, hdr, deploy(i, "")); !strings.Contains(body, `"st-`+strconv.Itoa(i)+`"`) {
			t.Fatalf("run %d: %s, want the upstream's question with st-%d", i, body, i)
		}
	}
	answer := `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":`
	_, _, body := post(t, url, hdr, deploy(3, answer+`"st-1"`))
	if userAnswers {
		var held struct {
			Result inputRequiredResult `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &held); err != nil || !strings.HasPrefix(held.Result.RequestState, "sluice-approval") {
			t.Fatalf("the answer to st-1: %s, want the gateway's question", body)
		}
		if _, _, body := post(t, url, hdr, deploy(4, answerParams("accept", held.Result.RequestState))); !strings.Contains(body, `"deployed"`) {
			t.Fatalf("the user's approval: %s, want the call run", body)
		}
		if _, _, body := post(t, url, hdr, deploy(5, answer+`"st-2"`)); !strings.Contains(body, "sluice-approval") {
			t.Errorf("the approved answers with st-2: %s, want it held anew", body)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 1 || ran[0] != "st-1" {
			t.Errorf("the upstream ran with states %q, want st-1 only", ran)
		}
		return
	}
	if !strings.Contains(body, "approval_required") {
		t.Fatalf("the answer to st-1: %s, want it held", body)
	}
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, body := post(t, url, hdr, deploy(4, answer+`"st-2"`)); !strings.Contains(body, "approval_required") {
		t.Errorf("the approved answers with st-2: %s, want it held anew", body)
	}
	if _, _, body := post(t, url, hdr, deploy(5, answer+`"st-1"`)); !strings.Contains(body, `"deployed"`) {
		t.Errorf("the approved answers with st-1: %s, want it run", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "st-1" {
		t.Errorf("the upstream ran with states %q, want st-1 only", ran)
	}
}

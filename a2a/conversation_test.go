package a2a

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
)

// historyAgent keeps each conversation's history by contextId, as an ADK
// agent keeps its session, and answers every message with the whole
// history of its context.
type historyAgent struct {
	mu   sync.Mutex
	hist map[string][]string
}

func (h *historyAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var said []string
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(a2ago.TextPart); ok {
			said = append(said, tp.Text)
		}
	}
	h.mu.Lock()
	h.hist[rc.ContextID] = append(h.hist[rc.ContextID], said...)
	history := strings.Join(h.hist[rc.ContextID], " | ")
	h.mu.Unlock()
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2ago.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	ev := a2ago.NewStatusUpdateEvent(rc, a2ago.TaskStateCompleted,
		a2ago.NewMessageForTask(a2ago.MessageRoleAgent, rc, a2ago.TextPart{Text: "history: " + history}))
	ev.Final = true
	return q.Write(ctx, ev)
}

func (h *historyAgent) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}

// said is what the agent holds of context id.
func (h *historyAgent) said(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.hist[id], " | ")
}

// newHistoryAgent serves a historyAgent with a2a-go's a2asrv (0.3 JSON-RPC).
func newHistoryAgent(t *testing.T) (*httptest.Server, *historyAgent) {
	t.Helper()
	exec := &historyAgent{hist: map[string][]string{}}
	h := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(&memTasks{m: map[a2ago.TaskID]*a2ago.Task{}}))
	return serveA2AGo(t, goodCard, h), exec
}

// serveA2AGo serves h, a2a-go's handler, as an agent: JSON-RPC at /rpc
// and card (BASE standing for the agent's URL) at the well-known path.
// It is closed when the test ends.
func serveA2AGo(t *testing.T, card string, h a2asrv.RequestHandler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	var agent *httptest.Server
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.ReplaceAll(card, "BASE", agent.URL))
	})
	mux.Handle("POST /rpc", a2asrv.NewJSONRPCHandler(h))
	agent = httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	return agent
}

// asPrincipal sends every request as principal (X-Test-Principal, which
// serveAs turns into the authenticated principal).
type asPrincipal string

func (p asPrincipal) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Principal", string(p))
	return http.DefaultTransport.RoundTrip(r)
}

// a2aGoClient is a2a-go's client for the agent served at gw, as principal.
func a2aGoClient(t *testing.T, gw, principal string) *a2aclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	card, err := agentcard.DefaultResolver.Resolve(ctx, gw+"/a2a/stub")
	if err != nil {
		t.Fatalf("resolving the card through the gateway: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: asPrincipal(principal)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

// say sends text in context (none: a new conversation) and returns the
// task the agent answered and its reply.
func say(t *testing.T, c *a2aclient.Client, contextID, text string) (*a2ago.Task, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: text})
	msg.ContextID = contextID
	res, err := c.SendMessage(ctx, &a2ago.MessageSendParams{Message: msg})
	if err != nil {
		return nil, "", err
	}
	task, ok := res.(*a2ago.Task)
	if !ok {
		t.Fatalf("answer %T, want a task", res)
	}
	var reply string
	if m := task.Status.Message; m != nil {
		for _, p := range m.Parts {
			if tp, ok := p.(a2ago.TextPart); ok {
				reply += tp.Text
			}
		}
	}
	return task, reply, nil
}

// TestAttackForgottenContext: a conversation is its starter's only while
// the gateway remembers it. Alice talks to an a2a-go agent that keeps each
// conversation's history (two turns, through the gateway, with a2a-go's
// client); then the gateway forgets her context — pushed out of its owner
// table by other conversations, lost with a restart, or expired from the
// shared store — while the agent still holds it. Bob names her contextId:
// his message must not join her conversation (nor read it back to him).
func TestAttackForgottenContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		// gateways returns the gateway alice talks through, and then the
		// one bob talks through after forget() ran.
		gateways func(t *testing.T, agentURL string) (alice, bob string, forget func())
	}{
		{"evicted", func(t *testing.T, agentURL string) (string, string, func()) {
			gw := serveAs(t, allow, agentURL, Options{MaxTasks: 8})
			return gw.URL, gw.URL, func() {
				c := a2aGoClient(t, gw.URL, "bob")
				for i := 0; i < 8; i++ { // a task and a context each
					if _, _, err := say(t, c, "", "busy"); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
		{"restarted", func(t *testing.T, agentURL string) (string, string, func()) {
			before := serveAs(t, allow, agentURL, Options{})
			after := serveAs(t, allow, agentURL, Options{})
			return before.URL, after.URL, func() {}
		}},
		{"expired", func(t *testing.T, agentURL string) (string, string, func()) {
			store := &mapTasks{m: map[string]string{}}
			one := serveAs(t, allow, agentURL, Options{Tasks: store})
			other := serveAs(t, allow, agentURL, Options{Tasks: store})
			return one.URL, other.URL, func() {
				store.mu.Lock()
				clear(store.m) // agent_tasks.ttl passed
				store.mu.Unlock()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentSrv, agent := newHistoryAgent(t)
			aliceGW, bobGW, forget := tc.gateways(t, agentSrv.URL)
			alice := a2aGoClient(t, aliceGW, "alice")
			task, _, err := say(t, alice, "", "my diagnosis is confidential")
			if err != nil {
				t.Fatal(err)
			}
			// A normal multi-turn conversation goes on through the gateway.
			_, reply, err := say(t, alice, task.ContextID, "what did I say?")
			if err != nil || !strings.Contains(reply, "confidential | what did I say?") {
				t.Fatalf("alice's second turn: reply %q, err %v; want her history", reply, err)
			}
			forget()
			_, reply, err = say(t, a2aGoClient(t, bobGW, "bob"), task.ContextID, "bob was here")
			if strings.Contains(reply, "confidential") {
				t.Errorf("bob read alice's conversation back: %q", reply)
			}
			if strings.Contains(agent.said(task.ContextID), "bob was here") {
				t.Errorf("bob's message joined alice's forgotten context: %q", agent.said(string(task.ContextID)))
			}
			if !errors.Is(err, a2ago.ErrTaskNotFound) { // -32001, "context not found"
				t.Errorf("bob in alice's forgotten context: err %v, want %v", err, a2ago.ErrTaskNotFound)
			}
		})
	}
}

// TestSoftDeniedConversationGoesOn: a soft denial answers with a rejected
// task in a context the gateway made up; the client may go on in that
// context (it is the caller's, though the agent never saw it), and no one
// else may.
func TestSoftDeniedConversationGoesOn(t *testing.T) {
	agent := newRecAgent(t, goodCard)
	dec := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if strings.Contains(string(d.Parameters), "forbidden") {
			return intercept.Decision{Verdict: intercept.Deny, Reason: "no", Mode: intercept.ModeToolResult}, nil
		}
		return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
	})
	gw := serveAs(t, dec, agent.srv.URL, Options{})
	var ans struct {
		Result struct {
			ContextID string `json:"contextId"`
			Status    struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", strings.Replace(sendHi, `"hi"`, `"forbidden"`, 1))
	if err := json.Unmarshal([]byte(got), &ans); err != nil || ans.Result.Status.State != "rejected" || ans.Result.ContextID == "" {
		t.Fatalf("soft denial: %s", got)
	}
	cid := ans.Result.ContextID
	in := strings.Replace(sendHi, `"role":"user"`, `"role":"user","contextId":"`+cid+`"`, 1)
	do(t, "POST", gw.URL+"/a2a/stub", "bob", "", in)
	if agent.saw(cid) {
		t.Fatalf("bob's message in alice's rejected conversation reached the agent")
	}
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", in); !agent.saw(cid) {
		t.Errorf("alice could not go on in the conversation her soft denial answered: %s", got)
	}
}

// TestManyTurnsKeepOthersContexts: a conversation the gateway forgot is
// refused, so one principal's long conversation (a task per turn) must
// not push another's conversation out of the owner table: alice's second
// turn, after bob's many in his one conversation, still goes on.
func TestManyTurnsKeepOthersContexts(t *testing.T) {
	agentSrv, _ := newHistoryAgent(t)
	gw := serveAs(t, allow, agentSrv.URL, Options{MaxTasks: 4})
	alice, bob := a2aGoClient(t, gw.URL, "alice"), a2aGoClient(t, gw.URL, "bob")
	mine, _, err := say(t, alice, "", "first")
	if err != nil {
		t.Fatal(err)
	}
	his, _, err := say(t, bob, "", "turn")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if _, _, err := say(t, bob, his.ContextID, "turn"); err != nil {
			t.Fatalf("bob's turn %d in his own conversation: %v", i+2, err)
		}
	}
	if _, reply, err := say(t, alice, mine.ContextID, "second"); err != nil || !strings.Contains(reply, "first | second") {
		t.Errorf("alice's second turn after bob's seven: reply %q, err %v", reply, err)
	}
}

package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// approvalFixture holds "add" for a human and allows everything else; with
// the store as Approver unless opts says otherwise.
func approvalFixture(t *testing.T, opts Options, noApprover bool) (*fixture, *approval.Store) {
	t.Helper()
	return approvalFixtureWith(t, opts, approval.Options{}, noApprover)
}

// approvalFixtureWith is approvalFixture with a store made from so.
func approvalFixtureWith(t *testing.T, opts Options, so approval.Options, noApprover bool) (*fixture, *approval.Store) {
	t.Helper()
	store := approval.NewStore(so)
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	if !noApprover {
		opts.Approver = store
	}
	return newFixture(t, dec, opts), store
}

// initializeWith opens a 2025-11-25 session whose client declares caps.
func initializeWith(t *testing.T, url, caps string) map[string]string {
	t.Helper()
	status, hdr, body := post(t, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != 200 || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: got %d %s", status, body)
	}
	h := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

// openPost sends body and returns the response unread, for streams.
func openPost(t *testing.T, ctx context.Context, url string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	resp, err := sendPost(ctx, url, hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rpc is the part of a JSON-RPC message the tests look at.
type rpc struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
	Result jsontext.Value `json:"result"`
}

// rpcReader reads c's next message, decoded and as sent; a read that
// fails ends the test.
func rpcReader(t *testing.T, ctx context.Context, c transport.Conn) func() (rpc, string) {
	return func() (rpc, string) {
		t.Helper()
		b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m rpc
		json.Unmarshal(b, &m)
		return m, string(b)
	}
}

func nextMessage(t *testing.T, rd *transport.SSEReader) (rpc, string) {
	t.Helper()
	ev, err := rd.Next()
	if err != nil {
		t.Fatalf("reading the next event: %v", err)
	}
	var m rpc
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("event %q: %v", ev.Data, err)
	}
	return m, string(ev.Data)
}

const addCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`

// askedToApprove sends addCall, the tool named tool, on url's session hdr
// and returns its stream and the gateway's approval question, its first
// message.
func askedToApprove(t *testing.T, ctx context.Context, url string, hdr map[string]string, tool string) (*transport.SSEReader, rpc) {
	t.Helper()
	rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, strings.Replace(addCall, `"add"`, `"`+tool+`"`, 1)).Body)
	q, raw := nextMessage(t, rd)
	if q.Method != "elicitation/create" {
		t.Fatalf("first message: got %s, want the gateway's approval question", raw)
	}
	return rd, q
}

// upstreamSaw reports whether any POST that reached the upstream contains s.
func (f *fixture) upstreamSaw(s string) bool { return f.rec.count(s) > 0 }

// onlyRequest returns the store's single request.
func onlyRequest(t *testing.T, store *approval.Store) approval.Request {
	t.Helper()
	rs := store.List()
	if len(rs) != 1 {
		t.Fatalf("approval requests: got %d, want 1: %+v", len(rs), rs)
	}
	return rs[0]
}

// TestElicitationApproval: a 2025-11-25 session whose client can elicit
// gets the held call as an elicitation/create request on the call's own
// SSE stream; its answer, posted separately and never forwarded, decides
// the approval request, and the stream then carries the call's outcome.
func TestElicitationApproval(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		forwarded    bool
		want         string // in the final message
		status       approval.Status
	}{
		{"accept", `"result":{"action":"accept","content":{"approve":true}}`, true, `"text":"5"`, approval.Used},
		{"accept without approving", `"result":{"action":"accept","content":{"approve":false}}`, false, approval.ReasonDeclined, approval.Declined},
		{"decline", `"result":{"action":"decline"}`, false, approval.ReasonDeclined, approval.Declined},
		{"cancel", `"result":{"action":"cancel"}`, false, approval.ReasonDeclined, approval.Declined},
		{"client error", `"error":{"code":-32601,"message":"no handler"}`, false, `"status":"approval_required"`, approval.Pending},
		{"unreadable answer", `"result":{"action":"accept","content":{"approve":"yes"}}`, false, `"status":"approval_required"`, approval.Pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, false)
			url := f.gw.URL + "/mcp/demo"
			hdr := initializeWith(t, url, `{"elicitation":{}}`)
			before := f.rec.n.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp := openPost(t, ctx, url, hdr, addCall)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("got %d %q, want 200 and an SSE stream", resp.StatusCode, ct)
			}
			rd := transport.NewSSEReader(resp.Body)
			q, raw := nextMessage(t, rd)
			if q.Method != "elicitation/create" || !strings.HasPrefix(string(q.ID), `"sluice-approval-1-`) || len(q.ID) < len(`"sluice-approval-1-`)+16 {
				t.Fatalf("first event: got %s, want elicitation/create with id sluice-approval-1-<random>", raw)
			}
			for _, s := range []string{`tool \"add\"`, `upstream \"demo\"`, `{\"a\":2,\"b\":3}`, `"required":["approve"]`, `"title":"Approve this call?"`} {
				if !strings.Contains(raw, s) {
					t.Errorf("elicitation %s lacks %s", raw, s)
				}
			}
			if got := f.rec.n.Load(); got != before {
				t.Fatalf("the held call reached the upstream before anyone answered")
			}
			req := onlyRequest(t, store)
			if req.Status != approval.Pending || !strings.Contains(raw, req.ID) {
				t.Fatalf("request %+v: want pending, named in the question", req)
			}

			status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,`+tc.answer+`}`)
			if status != http.StatusAccepted {
				t.Fatalf("posting the answer: got %d %s, want 202", status, body)
			}
			last, raw := nextMessage(t, rd)
			for last.Method != "" { // notifications the upstream sent on the way
				last, raw = nextMessage(t, rd)
			}
			if string(last.ID) != "7" || !strings.Contains(raw, tc.want) {
				t.Errorf("final message: got %s, want id 7 with %s", raw, tc.want)
			}
			if _, err := rd.Next(); err != io.EOF {
				t.Errorf("after the final message: got %v, want the stream to end", err)
			}
			if f.upstreamSaw("sluice-approval") {
				t.Errorf("the client's answer was forwarded upstream")
			}
			if got := f.upstreamSaw(`"name":"add"`); got != tc.forwarded {
				t.Errorf("call forwarded: got %v, want %v", got, tc.forwarded)
			}
			got := onlyRequest(t, store)
			if got.Status != tc.status {
				t.Errorf("request status: got %s, want %s", got.Status, tc.status)
			}
			if tc.status != approval.Pending && got.DecidedBy != "mcp-elicitation:raw" {
				t.Errorf("decided by: got %q, want mcp-elicitation:raw", got.DecidedBy)
			}
		})
	}
}

// TestElicitationOperatorDecides: an operator who decides while the user is
// being asked ends the wait; the question is withdrawn.
func TestElicitationOperatorDecides(t *testing.T) {
	f, store := approvalFixture(t, Options{}, false)
	url := f.gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, addCall).Body)
	q, _ := nextMessage(t, rd)
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	n, raw := nextMessage(t, rd)
	if n.Method != "notifications/cancelled" || !strings.Contains(raw, `"requestId":`+string(q.ID)) {
		t.Errorf("after the operator decided: got %s, want notifications/cancelled for %s", raw, q.ID)
	}
	last, raw := nextMessage(t, rd)
	for last.Method != "" {
		last, raw = nextMessage(t, rd)
	}
	if string(last.ID) != "7" || !strings.Contains(raw, `"text":"5"`) {
		t.Errorf("final message: got %s, want the add result", raw)
	}
	// A late answer from the user is taken, and dropped.
	status, _, _ := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"action":"decline"}}`)
	if status != http.StatusAccepted || f.upstreamSaw("sluice-approval") {
		t.Errorf("late answer: got %d, want 202 and nothing forwarded", status)
	}
	if got := onlyRequest(t, store); got.Status != approval.Used || got.DecidedBy != "alice" {
		t.Errorf("request: got %s by %q, want used, by alice", got.Status, got.DecidedBy)
	}
}

// TestElicitationClientLeaves: a client that goes away while asked leaves
// the request pending for an operator, and no goroutine behind.
func TestElicitationClientLeaves(t *testing.T) {
	f, store := approvalFixture(t, Options{}, false)
	url := f.gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{}}`)
	ctx, cancel := context.WithCancel(context.Background())
	resp := openPost(t, ctx, url, hdr, addCall)
	nextMessage(t, transport.NewSSEReader(resp.Body))
	if stacksContaining("gateway.(*Gateway).elicitApproval") == 0 {
		t.Fatal("no goroutine is waiting for the answer; the check below would prove nothing")
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for stacksContaining("gateway.(*Gateway).elicitApproval") > 0 || stacksContaining("approval.(*Store).Wait") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("still waiting for an answer 5s after the client left")
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if got := onlyRequest(t, store); got.Status != approval.Pending {
		t.Errorf("request: got %s, want pending", got.Status)
	}
	if f.upstreamSaw(`"name":"add"`) {
		t.Errorf("the held call reached the upstream")
	}
}

// TestApprovalWithoutElicitation: clients that cannot elicit, and gateways
// without an Approver, answer a held call with approval_required, as before.
func TestApprovalWithoutElicitation(t *testing.T) {
	for _, tc := range []struct {
		name, caps string
		approver   bool
	}{
		{"no capability", `{}`, true},
		{"url mode only", `{"elicitation":{"url":{}}}`, true},
		{"no approver", `{"elicitation":{}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, !tc.approver)
			url := f.gw.URL + "/mcp/demo"
			hdr := initializeWith(t, url, tc.caps)
			before := f.rec.n.Load()
			status, h, body := post(t, url, hdr, addCall)
			if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") ||
				!strings.Contains(body, `"status":"approval_required"`) || !strings.Contains(body, onlyRequest(t, store).ID) {
				t.Errorf("got %d %q %s, want the approval_required envelope naming the request", status, h.Get("Content-Type"), body)
			}
			if f.rec.n.Load() != before {
				t.Errorf("the held call reached the upstream")
			}
		})
	}
}

// modernCallWith is modernCall with client capabilities, a client name and
// extra params members.
func modernCallWith(id int, args, caps, agent, extra string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"add","arguments":` + args + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + agent +
		`","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
}

type inputRequiredResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message         string         `json:"message"`
			RequestedSchema jsontext.Value `json:"requestedSchema"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

// heldModern sends a 2026-07-28 add call and returns the input_required
// result it must get.
func heldModern(t *testing.T, f *fixture, body string) inputRequiredResult {
	t.Helper()
	status, _, resp := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), body)
	var m struct {
		Result inputRequiredResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &m); status != 200 || err != nil || m.Result.ResultType != "input_required" {
		t.Fatalf("got %d %s (%v), want an input_required result", status, resp, err)
	}
	return m.Result
}

func answerParams(action, state string) string {
	return `,"inputResponses":{"sluice-approval":{"action":"` + action + `","content":{"approve":true}}},"requestState":"` + state + `"`
}

// TestInputRequiredApproval: from 2026-07-28 on a held call is answered
// with input_required; the retry carrying the user's answer decides the
// approval request of exactly that call and agent, and only that.
func TestInputRequiredApproval(t *testing.T) {
	const caps = `{"elicitation":{}}`
	args := `{"a":2,"b":3}`
	t.Run("accept", func(t *testing.T) {
		f, store := approvalFixture(t, Options{}, false)
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		q, ok := held.InputRequests["sluice-approval"]
		req := onlyRequest(t, store)
		st, err := store.OpenState(held.RequestState)
		if !ok || q.Method != "elicitation/create" || err != nil || st.ApprovalID != req.ID || strings.Contains(held.RequestState, req.ID) ||
			!strings.Contains(q.Params.Message, `"add"`) ||
			!strings.Contains(string(q.Params.RequestedSchema), `"approve"`) {
			t.Fatalf("input_required: got %+v, want an elicitation/create for approval %s", held, req.ID)
		}
		if f.upstreamSaw(`"name":"add"`) {
			t.Fatal("the held call reached the upstream")
		}
		status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(2, args, caps, "agent-a", answerParams("accept", held.RequestState)))
		if status != 200 || !strings.Contains(body, `"text":"5"`) || !strings.Contains(body, `"id":2`) {
			t.Fatalf("retry: got %d %s, want the add result", status, body)
		}
		if f.upstreamSaw("inputResponses") || f.upstreamSaw("requestState") {
			t.Errorf("the answer to the gateway's question was forwarded upstream")
		}
		if got := onlyRequest(t, store); got.Status != approval.Used || got.DecidedBy != "mcp-elicitation:agent-a" {
			t.Errorf("request: got %s by %q, want used by mcp-elicitation:agent-a", got.Status, got.DecidedBy)
		}
	})
	t.Run("decline", func(t *testing.T) {
		f, store := approvalFixture(t, Options{}, false)
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(2, args, caps, "agent-a", answerParams("decline", held.RequestState)))
		if status != 200 || !strings.Contains(body, approval.ReasonDeclined) || !strings.Contains(body, `"resultType":"complete"`) {
			t.Errorf("retry: got %d %s, want the approval_declined denial", status, body)
		}
		if got := onlyRequest(t, store); got.Status != approval.Declined || f.upstreamSaw(`"name":"add"`) {
			t.Errorf("request: got %s, want declined and nothing forwarded", got.Status)
		}
	})
	// A requestState the gateway did not issue about this very call of this
	// very agent is refused with an error, and changes nothing.
	for _, tc := range []struct {
		name  string
		state func(f *fixture, own string) string
		want  string
	}{
		{"bogus state", func(*fixture, string) string { return "apr_bogus" }, "not a state this gateway issued"},
		{"altered state", func(_ *fixture, own string) string { return own[:len(own)-2] + "AA" }, "altered"},
		{"another call's state", func(f *fixture, _ string) string {
			return heldModern(t, f, modernCallWith(9, `{"a":100,"b":1}`, caps, "agent-a", "")).RequestState
		}, "another call"},
		{"another agent's state", func(f *fixture, _ string) string {
			return heldModern(t, f, modernCallWith(9, args, caps, "agent-b", "")).RequestState
		}, "another agent"},
		{"the bare approval id", func(f *fixture, _ string) string {
			// What the approval_required envelope tells any client, asked
			// or not: the id alone answers nothing.
			status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCall(9, "add", args))
			m := approvalIDPattern.FindString(body)
			if status != 200 || m == "" {
				t.Fatalf("held without elicitation: got %d %s, want approval_required with an id", status, body)
			}
			return m
		}, "not a state this gateway issued"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, false)
			own := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", "")).RequestState
			other := tc.state(f, own)
			status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(2, args, caps, "agent-a", answerParams("accept", other)))
			if status != 200 || errorCode(t, body) != intercept.CodeInvalidParams || !strings.Contains(body, "requestState") || !strings.Contains(body, tc.want) {
				t.Errorf("retry: got %d %s, want an invalid-params error saying %q", status, body, tc.want)
			}
			if f.upstreamSaw(`"name":"add"`) {
				t.Errorf("a call reached the upstream")
			}
			for _, r := range store.List() {
				if r.Status != approval.Pending {
					t.Errorf("request %s (%s): got %s, want still pending", r.ID, r.Agent, r.Status)
				}
			}
		})
	}
	t.Run("expired state", func(t *testing.T) {
		c := &testClock{t: time.Now()}
		f, store := approvalFixtureWith(t, Options{}, approval.Options{Timeout: time.Minute, Now: c.now}, false)
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		c.add(2 * time.Minute)
		status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(2, args, caps, "agent-a", answerParams("accept", held.RequestState)))
		if status != 200 || errorCode(t, body) != intercept.CodeInvalidParams || !strings.Contains(body, "expired") {
			t.Errorf("retry: got %d %s, want an invalid-params error saying the state expired", status, body)
		}
		if r := onlyRequest(t, store); r.Status == approval.Approved || r.Status == approval.Used || f.upstreamSaw(`"name":"add"`) {
			t.Errorf("request %s, want it not approved and nothing forwarded", r.Status)
		}
	})
	t.Run("no elicitation capability", func(t *testing.T) {
		f, _ := approvalFixture(t, Options{}, false)
		status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCall(1, "add", args))
		if status != 200 || !strings.Contains(body, `"status":"approval_required"`) || strings.Contains(body, "input_required") {
			t.Errorf("got %d %s, want the approval_required envelope", status, body)
		}
	})
	t.Run("upstream round trip passes", func(t *testing.T) {
		// inputResponses that do not answer the gateway belong to the
		// upstream's own input_required exchange: forwarded as they are
		// (a requestState only if the upstream issued it for this call:
		// TestUpstreamRequestStateBound).
		f, _ := approvalFixture(t, Options{}, false)
		body := strings.Replace(modernCall(1, "echo", `{"message":"m"}`), `"arguments":{"message":"m"}`,
			`"arguments":{"message":"m"},"inputResponses":{"upstream-q":{"action":"accept"}}`, 1)
		status, _, resp := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "echo"), body)
		if status != 200 || !f.upstreamSaw(`"upstream-q"`) {
			t.Errorf("got %d %s, want the call forwarded with its inputResponses", status, resp)
		}
	})
}

func TestTakeApprovalAnswer(t *testing.T) {
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","RequestState":"x",` +
		`"arguments":{"a":1},"inputResponses":{"sluice-approval":{"action":"accept","content":{"approve":true}}},"requestState":"apr_1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, ans, ok, err := takeApprovalAnswer(m)
	if err != nil || !ok {
		t.Fatalf("got ok=%v err=%v, want the answer taken", ok, err)
	}
	if want := (approvalAnswer{state: "apr_1", approve: true, answered: true}); !reflect.DeepEqual(ans, want) {
		t.Errorf("answer: got %+v, want %+v", ans, want)
	}
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}`; string(got.Raw) != want {
		t.Errorf("stripped: got %s, want %s", got.Raw, want)
	}
	if got.Name != "add" || string(got.Arguments) != `{"a":1}` {
		t.Errorf("stripped message decoded as %q %s", got.Name, got.Arguments)
	}
	// The entry's name spelt with escapes is still the gateway's: the
	// byte search that spares other calls the member scan must not miss it.
	m, err = intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",` +
		`"arguments":{"a":1},"inputResponses":{"sluice-appro\u0076al":{"action":"accept","content":{"approve":true}}},"requestState":"apr_1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ans, ok, err := takeApprovalAnswer(m); err != nil || !ok || !ans.approve {
		t.Errorf("escaped entry name: got ok=%v approve=%v err=%v, want the answer taken", ok, ans.approve, err)
	}
}

// TestTakeApprovalAnswerAllocs: a call that answers nothing costs
// takeApprovalAnswer no allocation (its answer was on the heap for every
// call while requestState was decoded into it by address).
func TestTakeApprovalAnswerAllocs(t *testing.T) {
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, _, ok, err := takeApprovalAnswer(m); ok || err != nil {
			t.Fatalf("got ok=%v err=%v, want nothing taken", ok, err)
		}
	}); n != 0 {
		t.Errorf("got %v allocations per call, want 0", n)
	}
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

// TestMCPGoClientApproves runs mcp-go's client, with an elicitation
// handler standing in for its user, through the gateway: over 2025-11-25
// it is asked by elicitation/create, over 2026-07-28 by input_required,
// and either way the call goes through only when the user approves.
func TestMCPGoClientApproves(t *testing.T) {
	stdio := buildDemoServer(t)
	for _, tc := range []struct {
		route, version, want string
	}{
		{"demo", "", mcp.ProtocolVersion20260728}, // mcp-go's default
		{"demo", mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125},
		// Neither needs anything of the upstream's transport.
		{"stdio", "", mcp.ProtocolVersion20260728},
		{"stdio", mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125},
	} {
		for _, approve := range []bool{true, false} {
			version := tc.version
			t.Run(tc.route+"/"+tc.want+map[bool]string{true: "/approve", false: "/decline"}[approve], func(t *testing.T) {
				f, store := approvalFixture(t, Options{Upstreams: []Upstream{{Name: "stdio", Command: stdio, Args: []string{"-transport", "stdio"}}}}, false)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				trans, err := mcptransport.NewStreamableHTTP(f.gw.URL + "/mcp/" + tc.route)
				if err != nil {
					t.Fatal(err)
				}
				var asked atomic.Int64
				var upstreamBefore int64
				opts := []client.ClientOption{client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
					asked.Add(1)
					if f.upstreamSaw(`"name":"add"`) || f.rec.n.Load() != upstreamBefore {
						t.Errorf("the held call reached the upstream before the user answered")
					}
					if !strings.Contains(r.Params.Message, `tool "add"`) {
						t.Errorf("question %q does not name the tool", r.Params.Message)
					}
					return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
						Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": approve}}}, nil
				}))}
				if version != "" {
					opts = append(opts, client.WithProtocolVersion(version))
				}
				c := client.NewClient(trans, opts...)
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "mcpgo-user", Version: "1"}}}); err != nil {
					t.Fatalf("Initialize: %v", err)
				}
				if got := c.ProtocolVersion(); got != tc.want {
					t.Fatalf("negotiated %q, want %q", got, tc.want)
				}
				upstreamBefore = f.rec.n.Load()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}})
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if asked.Load() != 1 {
					t.Errorf("user asked %d times, want once", asked.Load())
				}
				req := onlyRequest(t, store)
				if approve {
					if res.IsError || text(res) != "5" || req.Status != approval.Used {
						t.Errorf("got %+v (request %s), want the add result 5 and the approval used", res, req.Status)
					}
					return
				}
				if !res.IsError || !strings.Contains(text(res), "declined") || req.Status != approval.Declined || f.upstreamSaw(`"name":"add"`) {
					t.Errorf("got %+v (request %s), want a soft denial, the request declined and nothing forwarded", res, req.Status)
				}
			})
		}
	}
}

// FuzzTakeApprovalAnswer: whatever a client sends, taking the answer out of
// a call never panics, leaves no round-trip member behind in any case
// variant, and keeps the tool name and arguments policy decides on.
func FuzzTakeApprovalAnswer(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1},"inputResponses":{"sluice-approval":{"action":"accept","content":{"approve":true}}},"requestState":"apr_1"}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{"sluice-approval":null},"INPUTRESPONSES":1,"requeststate":[]}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{"other":{}}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		m, err := intercept.DecodeMessage([]byte(body))
		if err != nil {
			return
		}
		got, _, ok, err := takeApprovalAnswer(m)
		if err != nil || !ok {
			return
		}
		err = eachParam(got.Params, func(k string) {
			if strings.EqualFold(k, "inputResponses") || strings.EqualFold(k, "requestState") {
				t.Errorf("member %q left in %s", k, got.Raw)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != m.Name || !bytes.Equal(got.Arguments, m.Arguments) || got.Method != m.Method || !bytes.Equal(got.ID, m.ID) {
			t.Errorf("stripping changed the call: %s -> %s", m.Raw, got.Raw)
		}
	})
}

func eachParam(obj jsontext.Value, fn func(string)) error {
	var params map[string]jsontext.Value
	if err := json.Unmarshal(obj, &params); err != nil {
		return err
	}
	for k := range params {
		fn(k)
	}
	return nil
}

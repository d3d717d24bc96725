package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
)

// A call held for the user's approval (approvals.client_may_answer, a
// client that elicits) waits on the gateway. The client cancels it
// (notifications/cancelled: its user gave up, or the TypeScript SDK's
// AbortSignal fired, which keeps the POST's stream open). Before, the
// cancellation was passed on to the upstream, which never saw the call,
// and the gateway kept holding it: an operator who then approved the
// request from `sluice approvals list` had the abandoned call run
// upstream. Now the hold ends, the question is withdrawn, the approval
// request is withdrawn (an operator can no longer approve it), and the
// call is not answered (the client cancelled it).

const cancelAdd = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user gave up"}}`

// checkWithdrawn fails t unless the store's only request was withdrawn and
// an operator's approval of it is refused.
func checkWithdrawn(t *testing.T, store *approval.Store) {
	t.Helper()
	req := onlyRequest(t, store)
	if req.Status != approval.Withdrawn {
		t.Errorf("approval request after the cancellation: got %s, want %s", req.Status, approval.Withdrawn)
	}
	if _, err := store.Decide(req.ID, true, "alice"); err == nil {
		t.Errorf("an operator approved the call the client cancelled")
	}
}

func TestAttackCancelledHeldCallRuns(t *testing.T) {
	t.Run("streamable-http", func(t *testing.T) {
		f, store := approvalFixture(t, Options{}, false)
		url := f.gw.URL + "/mcp/demo"
		hdr := initializeWith(t, url, `{"elicitation":{}}`)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, addCall).Body)
		q, _ := nextMessage(t, rd)
		if q.Method != "elicitation/create" {
			t.Fatalf("first event: got %+v, want the approval question", q)
		}
		status, _, body := post(t, url, hdr, cancelAdd)
		if status != http.StatusAccepted {
			t.Fatalf("cancellation: got %d %s, want 202", status, body)
		}
		if f.upstreamSaw("notifications/cancelled") {
			t.Errorf("the cancellation of a call the upstream was never sent was passed on")
		}
		// An operator approves it (or tries to).
		if rs := store.List(); len(rs) == 1 && rs[0].Status == approval.Pending {
			_, _ = store.Decide(rs[0].ID, true, "alice")
		}
		n, raw := nextMessage(t, rd)
		if n.Method != "notifications/cancelled" || !strings.Contains(raw, `"requestId":`+string(q.ID)) {
			t.Errorf("after the cancellation: got %s, want the question withdrawn", raw)
		}
		if ev, err := rd.Next(); err != io.EOF {
			t.Errorf("after the question was withdrawn: got %q (%v), want the stream to end without an answer", ev.Data, err)
		}
		if f.upstreamSaw(`"name":"add"`) {
			t.Fatalf("the call the client cancelled ran upstream after an operator approved it")
		}
		checkWithdrawn(t, store)
	})
	t.Run("streamable-http after the client left", func(t *testing.T) {
		// A client that gives up closes its request first and cancels
		// after: the cancellation still withdraws the request.
		f, store := approvalFixture(t, Options{}, false)
		url := f.gw.URL + "/mcp/demo"
		hdr := initializeWith(t, url, `{"elicitation":{}}`)
		ctx, cancel := context.WithCancel(context.Background())
		resp := openPost(t, ctx, url, hdr, addCall)
		nextMessage(t, transport.NewSSEReader(resp.Body))
		cancel()
		resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for stacksContaining("gateway.(*Gateway).elicitApproval") > 0 {
			if time.Now().After(deadline) {
				t.Fatal("still holding the call 5s after the client left")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if status, _, body := post(t, url, hdr, cancelAdd); status != http.StatusAccepted {
			t.Fatalf("cancellation: got %d %s, want 202", status, body)
		}
		checkWithdrawn(t, store)
		if f.upstreamSaw(`"name":"add"`) || f.upstreamSaw("notifications/cancelled") {
			t.Errorf("the held call or its cancellation reached the upstream")
		}
	})
	for _, relayed := range []struct {
		name string
		dial func(base string) transport.Dialer
	}{
		{"ws", func(base string) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"}
		}},
		{"sse", func(base string) transport.Dialer { return &transport.SSEDialer{URL: base + "/sse/u"} }},
	} {
		t.Run(relayed.name, func(t *testing.T) { cancelHeldRelayed(t, relayed.dial) })
	}
}

// cancelHeldRelayed is TestAttackCancelledHeldCallRuns on a connection
// relayed to a stdio upstream, dialled by dial.
// heldOnConn dials a gateway holding add for approval in front of a
// scripted stdio upstream with dial, opens a 2025 session declaring
// elicitation and sends addCall: it returns the connection, a reader of
// it, the gateway's question and the approvals store.
func heldOnConn(t *testing.T, dial func(base string) transport.Dialer) (context.Context, transport.Conn, func() (rpc, string), rpc, *approval.Store, *scriptUpstream) {
	t.Helper()
	return heldOnConnWith(t, Options{}, "add", func(base string, _ *Gateway) transport.Dialer { return dial(base) })
}

// heldOnConnWith is heldOnConn on a gateway with opts (a virtual server,
// whose name for add is tool), dialled by dial, which is given the
// gateway too (`sluice wrap` serves a Conn of its own).
func heldOnConnWith(t *testing.T, opts Options, tool string, dial func(base string, g *Gateway) transport.Dialer) (context.Context, transport.Conn, func() (rpc, string), rpc, *approval.Store, *scriptUpstream) {
	t.Helper()
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
			return nil
		}
		if r.Method == "initialize" {
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`)}
		}
		if r.Method == "tools/list" { // what a virtual server lists to name the tools
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"tools":[{"name":"add","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}}`)}
		}
		return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"content":[{"type":"text","text":"ran ` + r.Params.Name + `"}]}}`)}
	}}
	g, base, store := holdingAddGatewayWith(t, up, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := dial(base, g).Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	read := rpcReader(t, ctx, c)
	c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"desk","version":"1"}}}`))
	read()
	c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	c.Write(ctx, []byte(strings.Replace(addCall, `"add"`, `"`+tool+`"`, 1)))
	q, raw := read()
	if q.Method != "elicitation/create" {
		t.Fatalf("want the gateway's question, got %s", raw)
	}
	return ctx, c, read, q, store, up
}

func cancelHeldRelayed(t *testing.T, dial func(base string) transport.Dialer) {
	ctx, c, read, q, store, up := heldOnConn(t, dial)
	c.Write(ctx, []byte(cancelAdd))
	// Messages are taken in order: once the echo is answered, the
	// cancellation was.
	withdrawn := false
	echo := func(id string) {
		t.Helper()
		c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
		for {
			m, raw := read()
			switch {
			case string(m.ID) == id:
				return
			case m.Method == "notifications/cancelled" && strings.Contains(raw, `"requestId":`+string(q.ID)):
				withdrawn = true
			default:
				t.Errorf("after the cancellation: got %s, want only the echo's answer and the question withdrawn", raw)
			}
		}
	}
	echo("9")
	if rs := store.List(); len(rs) == 1 && rs[0].Status == approval.Pending {
		_, _ = store.Decide(rs[0].ID, true, "alice")
	}
	echo("10")
	for _, m := range up.got() {
		if bytes.Contains(m, []byte(`"name":"add"`)) {
			t.Fatalf("the call the client cancelled ran upstream after an operator approved it: %s", m)
		}
	}
	if !withdrawn { // sent by the question's own goroutine: it may come last
		if m, raw := read(); m.Method != "notifications/cancelled" || !strings.Contains(raw, `"requestId":`+string(q.ID)) {
			t.Errorf("after the cancellation: got %s, want the question withdrawn", raw)
		}
	}
	for _, m := range up.got() {
		if bytes.Contains(m, []byte(`"name":"add"`)) {
			t.Fatalf("the call the client cancelled ran upstream after an operator approved it: %s", m)
		}
		if bytes.Contains(m, []byte(`notifications/cancelled`)) {
			t.Errorf("the cancellation of a call the upstream was never sent was passed on: %s", m)
		}
	}
	checkWithdrawn(t, store)
}

// TestCancelledHeldCallGoSDK: go-sdk's client, whose call's context ends
// while its user is asked, sends notifications/cancelled; the held call
// never runs, on a route and through a virtual server, even when an
// operator approves it after.
func TestCancelledHeldCallGoSDK(t *testing.T) {
	for _, tc := range []struct {
		name, path, tool, version string
		opts                      Options
	}{
		{"route", "/mcp/demo", "add", "2025-11-25", Options{}},
		{"virtual server", "/mcp", "demo_add", "2025-11-25", Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}},
		// A 2026-07-28 client is asked by an input_required result and
		// cancels by not sending the call again: nothing is held on the
		// gateway, the request stays pending, and its approval runs
		// nothing by itself.
		{"2026-07-28", "/mcp/demo", "add", "", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, store := approvalFixture(t, tc.opts, false)
			asked := make(chan struct{}, 1)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			callCtx, giveUp := context.WithCancel(ctx)
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					select {
					case asked <- struct{}{}:
					default:
					}
					select { // the user never answers; the agent gives up
					case <-ctx.Done():
					case <-callCtx.Done():
					}
					return nil, context.Canceled
				},
			})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.gw.URL + tc.path}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"a": 2, "b": 3}})
				done <- err
			}()
			select {
			case <-asked:
			case err := <-done:
				t.Fatalf("the call ended before its user was asked: %v", err)
			}
			giveUp()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the cancelled call did not return")
			}
			// The cancellation withdraws the request.
			deadline := time.Now().Add(5 * time.Second)
			for tc.version != "" && onlyRequest(t, store).Status == approval.Pending && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if rs := store.List(); len(rs) == 1 && rs[0].Status == approval.Pending {
				_, _ = store.Decide(rs[0].ID, true, "alice")
			}
			// Something else goes through after, so that the held call,
			// had it been released, would have reached the upstream first.
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: strings.TrimSuffix(tc.tool, "add") + "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			if f.upstreamSaw(`"name":"add"`) {
				t.Fatalf("the call the client cancelled ran upstream after an operator approved it")
			}
			if tc.version != "" {
				checkWithdrawn(t, store)
			}
		})
	}
}

// TestAggregateLateAnswerTaken: through a virtual server, the user's
// answer to an approval question that was withdrawn meanwhile (an
// operator decided, or the client cancelled the call) is taken and
// dropped, as on a route. Before, it was refused with 400 as an answer
// to a request never made, and go-sdk's client, whose elicitation
// handler answered after the gateway gave up on it, closed the session
// ("client is closing: sending jsonrpc response: Bad Request").
func TestAggregateLateAnswerTaken(t *testing.T) {
	f, store := approvalFixture(t, Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}, false)
	url := f.gw.URL + "/mcp"
	hdr := initializeWith(t, url, `{"elicitation":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd, q := askedToApprove(t, ctx, url, hdr, "demo_add")
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	for {
		m, raw := nextMessage(t, rd)
		if string(m.ID) == "7" {
			if !strings.Contains(raw, `"text":"5"`) {
				t.Fatalf("the call's answer: got %s, want the add result", raw)
			}
			break
		}
	}
	for { // the stream ends with the call, and the exchange with it
		if _, err := rd.Next(); err != nil {
			break
		}
	}
	status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"action":"accept","content":{"approve":true}}}`)
	if status != http.StatusAccepted {
		t.Errorf("late answer: got %d %s, want 202", status, body)
	}
	// Taken once: the same answer again, or one to an id never asked, is
	// refused as before.
	for _, id := range []string{string(q.ID), `"sluice-ask-99"`} {
		if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+id+`,"result":{"action":"decline"}}`); status != http.StatusBadRequest {
			t.Errorf("answer to %s: got %d %s, want 400", id, status, body)
		}
	}
	if f.upstreamSaw(`"action"`) {
		t.Errorf("an answer reached the upstream")
	}
}

// TestCancelAfterErrorAnswerRelayed: on /ws and /sse, a client whose user
// gave up answers the approval question with an error, then cancels the
// call (go-sdk's order). The error answer ended the hold at once, so the
// cancellation found nothing: the request stayed pending, and an
// operator could approve the call its client had cancelled. Now the hold
// stays cancellable for cancelGrace after such an answer, as on an HTTP
// session: the request is withdrawn.
func TestCancelAfterErrorAnswerRelayed(t *testing.T) {
	for _, relayed := range []struct {
		name string
		dial func(base string) transport.Dialer
	}{
		{"ws", func(base string) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"}
		}},
		{"sse", func(base string) transport.Dialer { return &transport.SSEDialer{URL: base + "/sse/u"} }},
	} {
		t.Run(relayed.name, func(t *testing.T) {
			ctx, c, read, q, store, _ := heldOnConn(t, relayed.dial)
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(q.ID)+`,"error":{"code":-32603,"message":"the user gave up"}}`))
			if m, raw := read(); string(m.ID) != "7" || !strings.Contains(raw, "approval_required") {
				t.Fatalf("after the error answer: got %s, want the call's hold", raw)
			}
			c.Write(ctx, []byte(cancelAdd))
			deadline := time.Now().Add(5 * time.Second)
			for onlyRequest(t, store).Status == approval.Pending && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			checkWithdrawn(t, store)
		})
	}
}

// TestCancelAfterGivingUp: go-sdk's client answers the approval question
// with an error when its user gives up, takes the held answer that
// follows, and only then sends notifications/cancelled. On a route the
// hold waits for it (releaseLater). Through a virtual server the client's
// request id was forgotten as soon as the held answer went out, the
// cancellation named no call, and the request stayed pending for an
// operator to approve (TestCancelledHeldCallGoSDK failed so about one
// run in fifteen under -race): the id is now kept for cancelGrace after
// a held answer, as after a client that went away.
func TestCancelAfterGivingUp(t *testing.T) {
	for _, tc := range []struct {
		name, path, tool string
		opts             Options
	}{
		{"route", "/mcp/demo", "add", Options{}},
		{"virtual server", "/mcp", "demo_add", Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, store := approvalFixture(t, tc.opts, false)
			url := f.gw.URL + tc.path
			hdr := initializeWith(t, url, `{"elicitation":{}}`)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			rd, q := askedToApprove(t, ctx, url, hdr, tc.tool)
			if code, _, b := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"error":{"code":-32603,"message":"context canceled"}}`); code != http.StatusAccepted {
				t.Fatalf("the error answer: %d %s", code, b)
			}
			for {
				m, raw := nextMessage(t, rd)
				if m.Method == "" {
					if !strings.Contains(raw, "approval_required") {
						t.Fatalf("the call's answer: got %s, want it held", raw)
					}
					break
				}
			}
			if _, err := rd.Next(); err == nil {
				t.Fatal("the call's stream goes on after its answer")
			}
			if code, _, b := post(t, url, hdr, cancelAdd); code != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: %d %s", code, b)
			}
			checkWithdrawn(t, store)
		})
	}
}

package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// The client's ids and a closed upstream (ids.go): after a sensitive read
// closes web to the agent, a plain message's id, a request's progress
// token and a cancellation's requestId carry no byte of the client's to
// web, and the client still sees its own ids in every answer.

// idShapes are plain messages (or allowed calls) whose correlation values
// the client chooses; {{M}} stands for the mark. want is what the client
// must find in the answer, "" for a notification.
var idShapes = []struct{ name, msg, want string }{
	{"ping id", `{"jsonrpc":"2.0","id":"{{M}}","method":"ping"}`, `"id":"{{M}}","result":{}`},
	{"tools/list id", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/list"}`, `"id":"{{M}}","result":{`},
	{"listed read id", `{"jsonrpc":"2.0","id":"{{M}}","method":"resources/read","params":{"uri":"` + listedURI + `"}}`, `"id":"{{M}}","result":{`},
	{"call id", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"}}}`, `"id":"{{M}}","result":{`},
	{"call progressToken", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"},"_meta":{"progressToken":"{{M}}"}}}`, `"id":3,"result":{`},
	{"escaped id", `{"jsonrpc":"2.0","id":"\u0053{{M}}","method":"ping"}`, `"result":{}`},
	{"cancelled requestId", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"{{M}}"}}`, ""},
}

// TestAttackIDPastRouteRule: each shape, on a 2025-11-25 session and as
// a 2026-07-28 request, reached the closed upstream with the mark in it
// before.
func TestAttackIDPastRouteRule(t *testing.T) {
	gw, web := carryGateway(t)
	readSecret(t, gw.URL)

	t.Run("session", func(t *testing.T) {
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		if _, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`); !strings.Contains(body, listedURI) {
			t.Fatalf("resources/list: %s", body)
		}
		for n, s := range idShapes {
			mark := markOf(300 + n)
			status, _, body := post(t, gw.URL+"/mcp/web", hdr, strings.ReplaceAll(s.msg, "{{M}}", mark))
			if web.reached(mark) {
				t.Errorf("%s: the mark reached the closed upstream (gateway answered %d %.200s)", s.name, status, body)
			}
			if want := strings.ReplaceAll(s.want, "{{M}}", mark); !strings.Contains(body, want) {
				t.Errorf("%s: got %d %.300s, want an answer holding %s", s.name, status, body, want)
			}
		}
	})

	t.Run("stateless", func(t *testing.T) {
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		for n, s := range []struct{ method, name, msg string }{
			{"resources/list", "", `{"jsonrpc":"2.0","id":"{{M}}","method":"resources/list","params":{` + meta + `}}`},
			{"tools/list", "", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/list","params":{` + meta + `}}`},
			{"tools/call", "lookup", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"},` + meta + `}}`},
		} {
			mark := markOf(400 + n)
			status, _, body := post(t, gw.URL+"/mcp/web", modernHeaders(s.method, s.name), strings.ReplaceAll(s.msg, "{{M}}", mark))
			if web.reached(mark) {
				t.Errorf("%s: the mark reached the closed upstream (gateway answered %d %.200s)", s.method, status, body)
			}
			if want := `"id":"` + mark + `"`; !strings.Contains(body, want) || !strings.Contains(body, `"result"`) {
				t.Errorf("%s: got %d %.300s, want a result under %s", s.method, status, body, want)
			}
		}
	})
}

// TestClosedUpstreamIDsLegit: on a closed upstream a client's ids of every
// JSON type come back as sent; its cancellation of an open call reaches
// the upstream under the gateway's id and ends the call; with nothing
// closed, the upstream gets the client's ids as before.
func TestClosedUpstreamIDsLegit(t *testing.T) {
	gw, web := carryGateway(t)
	sid := initialize(t, gw.URL+"/mcp/web")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"open-1","method":"ping"}`); !strings.Contains(body, `"id":"open-1"`) {
		t.Fatalf("ping before the read: %s", body)
	}
	if !web.reached(`"id":"open-1"`) {
		t.Errorf("before the read: want the upstream to get the client's id")
	}

	readSecret(t, gw.URL)
	for _, id := range []string{`0`, `-7`, `9007199254740991`, `""`, `"a"`, `"a\"b"`, `"ünï"`, `"x\u0041"`} {
		msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		status, _, body := post(t, gw.URL+"/mcp/web", hdr, msg)
		if status != 200 || !strings.Contains(body, `"id":`+id+`,`) && !strings.Contains(body, `"id":`+id+`}`) {
			t.Errorf("ping id %s: got %d %s, want its answer under the same id", id, status, body)
		}
	}
	if web.reached(`"id":-7`) || web.reached(`"id":9007199254740991`) || web.reached(`"ünï"`) {
		t.Errorf("after the read: a client's id reached the closed upstream")
	}

	// A call that waits until cancelled, on its own stream.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waited := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp/web",
			strings.NewReader(`{"jsonrpc":"2.0","id":"w-1","method":"tools/call","params":{"name":"wait","arguments":{"query":"x"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			waited <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		waited <- string(b)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !web.reached(`"name":"wait"`) {
		if time.Now().After(deadline) {
			t.Fatal("the wait call never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, _, body := post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w-1","reason":"bored"}}`); status != http.StatusAccepted {
		t.Errorf("cancellation: got %d %s, want 202", status, body)
	}
	if !web.reached(`"notifications/cancelled","params":{"requestId":"sluice-`) || web.reached(`"requestId":"w-1"`) || web.reached("bored") {
		t.Errorf("cancellation: want it sent under the gateway's id of the call, without its reason; posts %q", web.posts)
	}
	// mcp-go's server ends the call's handler on the cancellation and
	// answers it (the spec lets it): under the client's id.
	select {
	case b := <-waited:
		if !strings.Contains(b, `"id":"w-1"`) || !strings.Contains(b, "cancelled") || strings.Contains(b, "sluice-") {
			t.Errorf("the cancelled call's answer: got %s, want the handler's under the client's id", b)
		}
	case <-ctx.Done():
		t.Error("the cancelled call never ended")
	}
}

// relayedIDShapes are idShapes as a relay's client sends them: each
// request's answer must come under its id.
var relayedIDShapes = []struct{ name, msg string }{
	{"ping id", `{"jsonrpc":"2.0","id":"{{M}}","method":"ping"}`},
	{"tools/list id", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/list"}`},
	{"call id", `{"jsonrpc":"2.0","id":"{{M}}","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"}}}`},
	{"call progressToken", `{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"},"_meta":{"progressToken":"{{M}}"}}}`},
	{"cancelled requestId", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"{{M}}"}}`},
}

// TestAttackIDPastRouteRuleRelayed: the same over /ws, /sse and the stdio
// of `sluice wrap` (ServeConn), which the relay serves: each shape reached
// the closed upstream with the mark in it before.
func TestAttackIDPastRouteRuleRelayed(t *testing.T) {
	for n, tr := range []struct {
		name string
		open func(t *testing.T, gw string, g *Gateway) transport.Conn
	}{
		{"ws", func(t *testing.T, gw string, _ *Gateway) transport.Conn {
			return dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw, "http") + "/ws/web"})
		}},
		{"sse", func(t *testing.T, gw string, _ *Gateway) transport.Conn {
			return dialWith(t, &transport.SSEDialer{URL: gw + "/sse/web"})
		}},
		{"stdio", func(t *testing.T, _ string, g *Gateway) transport.Conn {
			toGW, fromClient := io.Pipe()
			toClient, fromGW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- g.ServeConn(context.Background(), "web", transport.NewStdioConn(toGW, fromGW, nil)) }()
			c := transport.NewStdioConn(toClient, fromClient, nil)
			t.Cleanup(func() { fromClient.Close(); c.Close(); <-done })
			return c
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			gw, g, web := carryGatewayG(t)
			readSecret(t, gw.URL)
			send := relayedSender(t, tr.open(t, gw.URL, g))
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for i, s := range relayedIDShapes {
				mark := markOf(600 + 100*n + i)
				msg := strings.ReplaceAll(s.msg, "{{M}}", mark)
				answer := send(msg)
				if web.reached(mark) {
					t.Errorf("%s: the mark reached the closed upstream over %s", s.name, tr.name)
				}
				if strings.Contains(msg, `"id":`) && !strings.Contains(answer, `"result"`) {
					t.Errorf("%s: got %.300s, want a result under the client's id", s.name, answer)
				}
			}
		})
	}
}

// relayedSender returns a func that writes msg to c and a ping after it,
// and returns msg's answer, if it is a request, once both are answered
// (by then msg reached the upstream, if it was forwarded). An answer is
// msg's only under msg's own id.
func relayedSender(t *testing.T, c transport.Conn) func(msg string) string {
	probe := 0
	recv := func() string {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return func(msg string) string {
		m, err := intercept.DecodeMessage([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		probe++
		id := `"probe-` + itoa(probe) + `"`
		for _, m := range []string{msg, `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`} {
			if err := c.Write(t.Context(), []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		answer, pinged := "", false
		for !pinged || (m.Kind == intercept.KindRequest && answer == "") {
			b := recv()
			a, err := intercept.DecodeMessage([]byte(b))
			switch {
			case err != nil || a.Kind == intercept.KindRequest || a.Kind == intercept.KindNotification:
			case a.IDKey() == id:
				pinged = true
			case a.IDKey() == m.IDKey():
				answer = b
			}
		}
		return answer
	}
}

// TestAttackIDPastRouteRuleVirtual: through a virtual server, whose inner
// requests take each upstream's route, a call's id and progress token
// reach no upstream closed to the client.
func TestAttackIDPastRouteRuleVirtual(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, web := carryVirtualClient(t, ctx)
	read, lookup := "", ""
	for _, n := range toolNames(t, ctx, c) {
		switch {
		case strings.HasSuffix(n, "read_document"):
			read = n
		case strings.HasSuffix(n, "lookup"):
			lookup = n
		}
	}
	if txt, isErr := callText(t, ctx, c, read, map[string]any{"path": "/hr/salaries.csv"}); isErr || read == "" || lookup == "" {
		t.Fatalf("sensitive read %q (lookup %q): %s", read, lookup, txt)
	}
	for n, req := range []mcptransport.JSONRPCRequest{
		{ID: mcp.NewRequestId("{{M}}"), Method: "tools/call", Params: map[string]any{"name": lookup, "arguments": map[string]any{"query": "x"}}},
		{ID: mcp.NewRequestId(int64(-9)), Method: "tools/call", Params: map[string]any{"name": lookup, "arguments": map[string]any{"query": "x"},
			"_meta": map[string]any{"progressToken": "{{M}}"}}},
	} {
		mark := markOf(950 + n)
		if id, ok := req.ID.Value().(string); ok {
			req.ID = mcp.NewRequestId(strings.ReplaceAll(id, "{{M}}", mark))
		}
		if p := req.Params.(map[string]any); p["_meta"] != nil {
			p["_meta"] = map[string]any{"progressToken": mark}
		}
		req.JSONRPC = "2.0"
		resp, err := c.GetTransport().SendRequest(ctx, req)
		if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), "results") || resp.ID.String() != req.ID.String() {
			t.Errorf("call %d: got %+v, %v, want web's result under %v", n, resp, err, req.ID)
		}
		if web.reached(mark) {
			t.Errorf("call %d: the mark reached the closed upstream through the virtual server", n)
		}
	}
}

// TestAttackAnswerIDPastRouteRule: an answer is plain when its result is
// empty, and its id was the client's to choose: under an id the closed
// upstream never asked the client, it reached the upstream before, on a
// session to an HTTP upstream, over /ws and on a bridged session.
func TestAttackAnswerIDPastRouteRule(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":"{{M}}","result":{}}`
	t.Run("session", func(t *testing.T) {
		gw, web := carryGateway(t)
		readSecret(t, gw.URL)
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		mark := markOf(970)
		status, _, body := post(t, gw.URL+"/mcp/web", hdr, strings.ReplaceAll(answer, "{{M}}", mark))
		if web.reached(mark) || status != http.StatusAccepted {
			t.Errorf("got %d %s (reached: %v), want 202 and nothing at the upstream", status, body, web.reached(mark))
		}
	})
	t.Run("ws", func(t *testing.T) {
		gw, web := carryGateway(t)
		readSecret(t, gw.URL)
		send := relayedSender(t, dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web"}))
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		mark := markOf(971)
		send(strings.ReplaceAll(answer, "{{M}}", mark))
		if web.reached(mark) {
			t.Error("the answer's id reached the closed upstream over /ws")
		}
	})
	t.Run("bridged", func(t *testing.T) {
		gw, web := bridgedGateway(t)
		readSecret(t, gw.URL)
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		mark := markOf(972)
		post(t, gw.URL+"/mcp/web", hdr, strings.ReplaceAll(answer, "{{M}}", mark))
		// A ping after it: by its answer the answer was written, if it was.
		post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"probe","method":"ping"}`)
		if web.reached(mark) {
			t.Error("the answer's id reached the closed bridged upstream")
		}
	})
}

// TestAttackIDTableFlood: a bridged session remembers a request sent
// under the gateway's id until the upstream answers it, though the
// client's POST has gone; a client sending requests the upstream never
// answers (a long call, a method it ignores), under ids as long as a body
// may be, grew its session's table without end (it held every body,
// too: the id was a slice of it). The table keeps the newest maxSwapped,
// within maxSwappedBytes of ids, and a recent request is still answered
// under the client's id.
func TestAttackIDTableFlood(t *testing.T) {
	var ids idTable
	long := strings.Repeat("x", 8<<10)
	for n := range 3 * maxSwapped {
		msg := `{"jsonrpc":"2.0","id":"` + long + itoa(n) + `","method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":"` + long + `"}}}`
		if _, err := ids.send([]byte(msg), false, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids.mu.Lock()
	n, b, order := len(ids.ids), ids.bytes, len(ids.order)
	ids.mu.Unlock()
	if n > maxSwapped || b > maxSwappedBytes || order > 2*maxSwapped+1 {
		t.Errorf("got %d requests, %d bytes of ids, %d keys in order; want at most %d, %d, %d", n, b, order, maxSwapped, maxSwappedBytes, 2*maxSwapped+1)
	}
	sent, err := ids.send([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := intercept.DecodeMessage(sent)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ids.restore([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`))); got != `{"jsonrpc":"2.0","id":7,"result":{}}` {
		t.Errorf("the answer to the newest request: got %s, want it under id 7", got)
	}
}

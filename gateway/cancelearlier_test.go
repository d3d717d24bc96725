package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
)

// A cancellation of a request sent before the route closed (ids.go): the
// upstream was sent that request under the client's own id, so the
// cancellation goes on under that id, and only that one.

// notifyOn returns next, which also closes the returned channel the
// first time a POST body holding mark passes.
func notifyOn(next http.Handler, mark string) (http.Handler, <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if strings.Contains(string(b), mark) {
				once.Do(func() { close(ch) })
			}
		}
		next.ServeHTTP(w, r)
	}), ch
}

// TestClosedUpstreamCancelsEarlierCall: a call sent to web while it was
// open to the client, and still running when a sensitive read closed web,
// is cancelled by the client: its cancellation reaches web under the
// call's id, the one web was sent, and the call ends with web's answer
// (before, it was not passed on and the call ran to its end). A
// cancellation naming a call that has ended, or one never sent, is still
// not passed on.
func TestClosedUpstreamCancelsEarlierCall(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		up, web := tapServer(t)
		gw, _ := carryStack(t, Options{}, Upstream{Name: "web", URL: up.URL + "/mcp"})
		url := gw.URL + "/mcp/web"
		sid := initialize(t, url)
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		if _, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":"done-1","method":"tools/call","params":{"name":"lookup","arguments":{"query":"x"}}}`); !strings.Contains(body, "results") {
			t.Fatalf("lookup: %s", body)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		waited := make(chan string, 1)
		go func() {
			_, b := request(t, ctx, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":"early-1","method":"tools/call","params":{"name":"wait","arguments":{"query":"x"}}}`)
			waited <- b
		}()
		// The tool itself running, not its request passing by: mcp-go
		// drops a cancellation of a request it has not yet registered,
		// and under load the call then waited for good.
		select {
		case <-web.waiting:
		case <-time.After(30 * time.Second):
			t.Fatal("the wait tool did not start")
		}
		readSecret(t, gw.URL)

		for _, id := range []string{`"done-1"`, `"never-1"`} {
			if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`); status != http.StatusAccepted {
				t.Errorf("cancellation of %s: got %d %s, want 202", id, status, body)
			}
			if web.reached(`"requestId":` + id) {
				t.Errorf("cancellation of %s, no call waiting on web: passed on, want it not", id)
			}
		}
		if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"early-1","reason":"bored"}}`); status != http.StatusAccepted {
			t.Errorf("cancellation: got %d %s, want 202", status, body)
		}
		if !web.reached(`"method":"notifications/cancelled","params":{"requestId":"early-1"}`) || web.reached("bored") {
			t.Fatalf("the cancellation of the call sent before the read: not passed on under its id without its reason; posts %q", web.posts)
		}
		select {
		case b := <-waited:
			if !strings.Contains(b, `"id":"early-1"`) || !strings.Contains(b, "cancelled") {
				t.Errorf("the cancelled call: got %s, want web's answer under its id", b)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the cancelled call did not end")
		}
	})

	t.Run("bridged", func(t *testing.T) {
		gw, web := bridgedGateway(t)
		url := gw.URL + "/mcp/web"
		sid := initialize(t, url)
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		if _, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":"done-2","method":"tools/call","params":{"name":"count","arguments":{}}}`); !strings.Contains(body, "counted") {
			t.Fatalf("count: %s", body)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		waited := make(chan string, 1)
		go func() {
			_, b := request(t, ctx, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":"early-2","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
			waited <- b
		}()
		web.waitFor(t, `"name":"wait"`)
		readSecret(t, gw.URL)

		for _, m := range []string{
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"done-2"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-2"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"early-2","reason":"bored"}}`,
		} {
			if status, _, body := post(t, url, hdr, m); status != http.StatusAccepted {
				t.Errorf("%s: got %d %s, want 202", m, status, body)
			}
		}
		// The bridge writes one message at a time, in order, and web
		// reads them so: once a ping sent after them is answered, web has
		// read every cancellation passed on.
		if _, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":"after-cancel","method":"ping"}`); !strings.Contains(body, `"result"`) {
			t.Fatalf("ping: %s", body)
		}
		if web.reached(`"requestId":"done-2"`) || web.reached(`"requestId":"never-2"`) {
			t.Error("a cancellation naming no call waiting on web was passed on")
		}
		if !web.reached(`"method":"notifications/cancelled","params":{"requestId":"early-2"}`) || web.reached("bored") {
			t.Fatal("the cancellation of the call sent before the read: not passed on under its id without its reason")
		}
		if b := <-waited; !strings.Contains(b, `"id":"early-2"`) || !strings.Contains(b, "cancelled") {
			t.Errorf("the cancelled call: got %s, want web's answer under its id", b)
		}
	})
	t.Run("ws", func(t *testing.T) {
		gw, web := bridgedGateway(t)
		c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web"})
		// until reads messages until one holds want, and returns them all.
		until := func(want string) string {
			var got []string
			for {
				b, err := c.Read(t.Context())
				if err != nil {
					t.Fatalf("waiting for %s: %v (read %q)", want, err, got)
				}
				got = append(got, string(b))
				if strings.Contains(string(b), want) {
					return strings.Join(got, "\n")
				}
			}
		}
		write := func(m string) {
			if err := c.Write(t.Context(), []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		until(`"id":"init"`)
		write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		write(`{"jsonrpc":"2.0","id":"done-3","method":"tools/call","params":{"name":"count","arguments":{}}}`)
		until(`"id":"done-3","result"`)
		// The relay forgets an answered request just after passing the
		// answer on, from the goroutine that passes the next one: once a
		// ping's answer is here, done-3 has ended. Before that, a
		// cancellation of done-3 may still be taken for a request waiting
		// on web, and passed on (harmless: web knows that id, and a
		// cancellation crossing an answer is one the protocol allows).
		write(`{"jsonrpc":"2.0","id":"before-cancel","method":"ping"}`)
		until(`"id":"before-cancel"`)
		write(`{"jsonrpc":"2.0","id":"early-3","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
		web.waitFor(t, `"name":"wait"`)
		readSecret(t, gw.URL)

		write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"done-3"}}`)
		write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-3"}}`)
		write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"early-3","reason":"bored"}}`)
		// The relay and web take messages in order: web's answer to a
		// ping sent last comes after all it does with those before.
		write(`{"jsonrpc":"2.0","id":"after-cancel","method":"ping"}`)
		got := until(`"id":"after-cancel"`)
		if !strings.Contains(got, `"id":"early-3"`) {
			// web answers the cancelled call from the call's own
			// goroutine, which may write after the ping's answer.
			got += "\n" + until(`"id":"early-3"`)
		}
		if web.reached(`"requestId":"done-3"`) || web.reached(`"requestId":"never-3"`) {
			t.Error("a cancellation naming no call waiting on web was passed on")
		}
		if !web.reached(`"method":"notifications/cancelled","params":{"requestId":"early-3"}`) || web.reached("bored") {
			t.Fatal("the cancellation of the call sent before the read: not passed on under its id without its reason")
		}
		if !strings.Contains(got, `"id":"early-3","result":{"content":[{"type":"text","text":"cancelled"}]}`) {
			t.Errorf("the cancelled call: got %q, want web's answer under its id", got)
		}
	})
}

// TestAttackCancelForgottenSwap: a relay's table of requests sent under
// the gateway's ids forgets the oldest past 4 MiB of the client's ids and
// tokens, while the relay still waits on it. Taking every request waiting
// without a gateway's id for one sent under the client's own would pass
// on a cancellation of that forgotten one under the client's id, the
// secret: a request sent after the read is never taken for one sent before.
func TestAttackCancelForgottenSwap(t *testing.T) {
	gw, web := bridgedGateway(t)
	c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web"})
	send := relayedSender(t, c)
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	readSecret(t, gw.URL)
	const mark = "SECRET-hr-salaries-cancel"
	write := func(m string) {
		if err := c.Write(t.Context(), []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":"` + mark + `","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	// Tokens of 1 MiB push it out of the table of the gateway's ids.
	token := strings.Repeat("t", 1<<20)
	for i := range 5 {
		write(`{"jsonrpc":"2.0","id":"flood-` + itoa(i) + `","method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":"` + token + itoa(i) + `"}}}`)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + mark + `"}}`)
	if web.reached(mark) {
		t.Error("the cancellation of a request sent after the read reached the closed upstream under the client's id")
	}
}

package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestHelperHandOnStdio is a stdio MCP server for
// TestBridgePostReturnsWhileGetStreamStalls, run as its child process; on
// its own it does nothing. Tool fill answers, then writes fillNotes
// notifications (to the session's GET stream: no request waits on them);
// tool busy, once the client sends notifications/roots/list_changed,
// writes as many, flood's with them, to its call's stream, then answers;
// tool flood never answers, and once the client sends
// notifications/roots/list_changed floodNotes notifications follow on its
// call's stream.
func TestHelperHandOnStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_HANDON_STDIO") != "1" {
		return
	}
	note := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	var busy json.RawMessage // the id of a busy call not answered yet
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if len(m.ID) == 0 {
			if m.Method == "notifications/roots/list_changed" {
				for i := range floodNotes {
					fmt.Println(note(100 + i))
				}
				if busy != nil {
					for i := range fillNotes - floodNotes {
						fmt.Println(note(i))
					}
					fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"busy"}]}}`+"\n", busy)
					busy = nil
				}
			}
			continue
		}
		answer := func(result string) { fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result) }
		switch {
		case m.Method == "initialize":
			answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"handon","version":"1"}}`)
		case m.Method == "tools/list":
			answer(`{"tools":[{"name":"fill","inputSchema":{"type":"object"}},{"name":"flood","inputSchema":{"type":"object"}},{"name":"busy","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call" && m.Params.Name == "fill":
			answer(`{"content":[{"type":"text","text":"filled"}]}`)
			for i := range fillNotes {
				fmt.Println(note(i))
			}
		case m.Method == "tools/call" && m.Params.Name == "flood":
		case m.Method == "tools/call" && m.Params.Name == "busy":
			busy = m.ID
		default:
			answer(`{}`)
		}
	}
	os.Exit(0)
}

// What TestHelperHandOnStdio's tools write: fill one more than a stream's
// channel holds (its handler takes one), flood a few.
const (
	fillNotes  = 17
	floodNotes = 4
)

// TestBridgePostReturnsWhileGetStreamStalls: a POST on a bridged session
// whose client leaves while its stream holds messages it did not take
// (here its credential lapsing as the upstream's notifications came)
// hands them on to the session's GET stream; a GET stream whose client
// does not read (here its handler held on the credential's check, as on
// a write to a client that reads nothing) kept the POST's handler
// waiting in release for as long, and the server's Close, or an
// operator's Shutdown, waiting for it in turn. The POST's handler must
// return at once.
func TestBridgePostReturnsWhileGetStreamStalls(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: os.Args[0], Args: []string{"-test.run=^TestHelperHandOnStdio$"},
		Env: map[string]string{"SLUICE_TEST_HANDON_STDIO": "1"}}}}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	// Every request is alice's; a request marked X-Test-Stall has its
	// credential checked as it came (servedAs), and after that: the GET
	// stream's check waits until the test ends once stallGet is set, the
	// POST's, once stallPost is set, waits for leave, then says the
	// credential lapsed.
	var stallGet, stallPost atomic.Bool
	leave := make(chan struct{})
	gw := servedAs(t, g, func(r *http.Request) *intercept.Principal {
		checked := false
		mark := r.Header.Get("X-Test-Stall")
		return &intercept.Principal{ID: "alice", Method: "api_key", Check: func() error {
			first := !checked
			checked = true
			switch {
			case first || mark == "":
			case mark == "get" && stallGet.Load():
				untilReleased(t, nil)
			case mark == "post" && stallPost.Load():
				untilReleased(t, leave)
				return errors.New("the API key was revoked")
			}
			return nil
		}}
	})
	url := gw.URL + "/mcp/u"
	hdr, b := bridgedSession(t, g, url)
	waitFor := func(what string, ok func() bool) { t.Helper(); waitBridge(t, b, what, ok) }

	// The GET stream's handler takes fill's first notification and
	// stalls on it; the rest fill its channel.
	openGetStream(t.Context(), t, url, with(hdr, "X-Test-Stall", "get"))
	stallGet.Store(true)
	if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fill","arguments":{}}}`); status != http.StatusOK || !strings.Contains(body, "filled") {
		t.Fatalf("fill: %d %s", status, body)
	}
	waitFor("the GET stream's channel full", func() bool { return b.get != nil && len(b.get.ch) == cap(b.get.ch) })

	// flood's stream: its handler takes the first notification and waits
	// on the credential's check; the others wait in its channel.
	answered := make(chan string, 1)
	go func() {
		resp, err := sendPost(t.Context(), url, with(hdr, "X-Test-Stall", "post"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{}}}`)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- string(body)
	}()
	waitFor("flood's stream open", func() bool { return len(b.streams) == 1 })
	stallPost.Store(true)
	if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); status != http.StatusAccepted {
		t.Fatalf("roots/list_changed: %d %s", status, body)
	}
	waitFor("flood's notifications waiting on its stream", func() bool {
		return len(b.streams) == 1 && len(b.streams[0].ch) == floodNotes-1
	})

	// The credential lapses: the POST's handler answers so and returns.
	close(leave)
	select {
	case body := <-answered:
		if !strings.Contains(body, "no longer holds") {
			t.Errorf("flood: %s, want its credential's lapse", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the POST's handler did not return: it waits to hand on to the GET stream, which takes nothing")
	}
}

// TestAttackBridgeCloseWaitsForAnsweredStream: ending a bridged session
// (its client's DELETE, the idle reaper, the gateway's Close) gives up
// its streams after closeGrace, so that it never waits on a client; but
// it gave up only the streams still listed, and a POST stream is
// unlisted as its last answer is routed, before the answer is
// delivered. A client that stops reading its call's stream while the
// upstream's notifications fill it kept the upstream's reader waiting to
// hand it the answer, and the session's end waiting for the reader, for
// as long as the client kept its connection open (here until the test
// ends). The session's end must give up every stream it has open.
func TestAttackBridgeCloseWaitsForAnsweredStream(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: os.Args[0], Args: []string{"-test.run=^TestHelperHandOnStdio$"},
		Env: map[string]string{"SLUICE_TEST_HANDON_STDIO": "1"}}}}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	// Once stalling is set, the credential check of a request marked
	// X-Test-Stall waits until the test ends: its handler is stuck as on
	// a write to a client that reads nothing.
	var stalling atomic.Bool
	gw := servedAs(t, g, func(r *http.Request) *intercept.Principal {
		stall := r.Header.Get("X-Test-Stall") != ""
		return &intercept.Principal{ID: "alice", Method: "api_key", Check: func() error {
			if stall && stalling.Load() {
				untilReleased(t, nil)
			}
			return nil
		}}
	})
	url := gw.URL + "/mcp/u"
	hdr, b := bridgedSession(t, g, url)
	waitFor := func(what string, ok func() bool) { t.Helper(); waitBridge(t, b, what, ok) }
	go func() {
		resp, err := sendPost(t.Context(), url, with(hdr, "X-Test-Stall", "1"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"busy","arguments":{}}}`)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	var s *stream
	waitFor("busy's stream open", func() bool {
		if len(b.streams) == 1 {
			s = b.streams[0]
		}
		return s != nil
	})
	stalling.Store(true)
	if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); status != http.StatusAccepted {
		t.Fatalf("roots/list_changed: %d %s", status, body)
	}
	waitFor("busy's answer routed to its stream, which has no room", func() bool {
		return len(b.streams) == 0 && len(b.waiters) == 0 && len(s.ch) == cap(s.ch)
	})

	ended := make(chan struct{})
	go func() {
		defer close(ended)
		b.close()
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's end waits for a client that reads nothing: its answered stream was not given up")
	}
}

// bridgedSession opens a session on url, a route to a stdio upstream of
// g, and returns its headers and its bridge.
func bridgedSession(t *testing.T, g *Gateway, url string) (map[string]string, *bridgeState) {
	t.Helper()
	hdr := openSession(t, url, "c", nil)
	sess := g.sessions.find(hdr[hdrSession])
	if sess == nil || sess.bridge == nil {
		t.Fatalf("no bridged session %q", hdr[hdrSession])
	}
	return hdr, sess.bridge
}

// waitBridge polls what b holds, under its lock, until ok says so, for up
// to 10s; failing, it says what b's streams and backlog hold.
func waitBridge(t *testing.T, b *bridgeState, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		done := ok()
		b.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			b.mu.Lock()
			n, get := len(b.streams), -1
			chs := []int{}
			for _, s := range b.streams {
				chs = append(chs, len(s.ch))
			}
			if b.get != nil {
				get = len(b.get.ch)
			}
			b.mu.Unlock()
			t.Fatalf("after 10s, still not %s (%d POST streams holding %v, GET %d, backlog %d)", what, n, chs, get, len(b.backlog))
		}
	}
}

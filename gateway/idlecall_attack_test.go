package gateway

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackIdleSessionCallInFlightForgets: a session whose call is still
// running at its upstream is not idle — its client waits on the call's
// POST — but the gateway counted only requests that came (and calls held
// for approval), and ended the session under the call once
// session_idle_timeout passed: a route's session while the call ran, a
// virtual server's (which kept it while its call ran) at the first look
// after the call, its idle time counted from when the call came. Its
// route memory went with it. An agent whose sensitive read took longer
// than the idle timeout found its session gone once the read was
// answered, started another and had the network sink allowed. Now a
// session with a call in flight, its answer in one piece or streamed, is
// not idle, and its idle time counts from when its last call ended: the
// sink in the same session is denied.
func TestAttackIdleSessionCallInFlightForgets(t *testing.T) {
	for _, c := range []struct {
		name, path string
		streamed   bool // the answer comes as an event stream, progress first
	}{
		{"route, answer streamed", "/mcp/demo", true},
		{"route, answer in one piece", "/mcp/demo", false},
		{"virtual server, answer streamed", "/mcp", true},
		{"virtual server, answer in one piece", "/mcp", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := newIdleSessions(t)
			url := is.gw + c.path
			sid := initialize(t, url)
			hdr := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"}
			// The read runs for 1s, a long time past the idle timeout
			// (40ms) by the sessions' clock, moved while it runs.
			answered := make(chan string, 1)
			if c.streamed {
				resp, cancel := startSlowCount(t, url, sid, 3, 20, 50)
				t.Cleanup(func() { cancel(); resp.Body.Close() })
				answer := bufio.NewReader(resp.Body)
				if line, err := answer.ReadString('\n'); err != nil {
					t.Fatalf("the read's answer: %q %v, want its progress streamed", line, err)
				}
				go func() { rest, _ := io.ReadAll(answer); answered <- string(rest) }()
			} else {
				// Its POST has no answer, not even headers, until the end.
				go func() {
					resp, err := sendPost(t.Context(), url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":10,"delay_ms":100}}}`)
					if err != nil {
						answered <- err.Error()
						return
					}
					defer resp.Body.Close()
					rest, _ := io.ReadAll(resp.Body)
					answered <- string(rest)
				}()
				<-is.called
			}
			is.idle(c.path == "/mcp")
			if rest := <-answered; !strings.Contains(rest, `"result"`) || strings.Contains(rest, `"isError":true`) {
				t.Fatalf("the read's answer: %s", rest)
			}
			if c.path == "/mcp" {
				is.look() // as when another session opens
			}
			status, _, body := post(t, url, hdr, webSearch(4, "salaries", ""))
			if is.rec.count(`"web_search"`) > 0 {
				t.Errorf("web_search ran after a sensitive read in its session (the session was ended as idle under the read): %d %s", status, body)
			}
			if !routeDenied(body) {
				t.Errorf("web_search in the session of the read: %d %s, want the route rule's denial", status, body)
			}
		})
	}
}

// TestSessionIdleOnceCallsEnd: what keeps a session with a call in
// flight from going idle (TestAttackIdleSessionCallInFlightForgets) ends
// with the call, however it ends — answered, its client gone, its
// upstream broken off, the gateway's handler panicking (net/http
// recovers) — and the session, a route's or a virtual server's with its
// inner one, is ended once idle again.
func TestSessionIdleOnceCallsEnd(t *testing.T) {
	const quick = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":1,"delay_ms":1}}}`
	for _, where := range []struct{ name, path string }{{"route", "/mcp/demo"}, {"virtual server", "/mcp"}} {
		path := where.path
		for _, c := range []struct {
			name string
			call func(t *testing.T, is *idleSessions, url string, hdr map[string]string)
		}{
			{"answered", func(t *testing.T, _ *idleSessions, url string, hdr map[string]string) {
				if _, _, body := post(t, url, hdr, quick); !strings.Contains(body, "counted to 1") {
					t.Fatalf("the call's answer: %s", body)
				}
			}},
			{"client gone", func(t *testing.T, _ *idleSessions, url string, hdr map[string]string) {
				resp, cancel := startSlowCount(t, url, hdr[hdrSession], 3, 100, 50)
				defer resp.Body.Close()
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					t.Fatalf("the call's progress: %v", err)
				}
				cancel()
			}},
			{"upstream broke off", func(t *testing.T, is *idleSessions, url string, hdr map[string]string) {
				resp, cancel := startSlowCount(t, url, hdr[hdrSession], 3, 100, 50)
				defer cancel()
				defer resp.Body.Close()
				answer := bufio.NewReader(resp.Body)
				if _, err := answer.ReadString('\n'); err != nil {
					t.Fatalf("the call's progress: %v", err)
				}
				is.up.CloseClientConnections()
				io.Copy(io.Discard, answer) // to the gateway's error
			}},
			{"panicked", func(t *testing.T, is *idleSessions, url string, hdr map[string]string) {
				req := httptest.NewRequest(http.MethodPost, url, strings.NewReader(quick))
				req.Host, req.RemoteAddr = strings.TrimPrefix(is.gw, "http://"), "127.0.0.1:1"
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				defer func() {
					if recover() == nil {
						t.Fatal("the answer was written: no panic")
					}
				}()
				is.g.Handler().ServeHTTP(panicking{}, req)
			}},
		} {
			t.Run(where.name+", "+c.name, func(t *testing.T) {
				is := newIdleSessions(t)
				url := is.gw + path
				sid := initialize(t, url)
				c.call(t, is, url, map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"})
				// A virtual session whose client went away during a call
				// keeps the call known for cancelGrace, for the
				// cancellation that may follow (aggSession.track): only
				// the count of what it serves is back to none.
				graced := path == "/mcp" && c.name == "client gone"
				if !is.reapedSoon(path == "/mcp", graced) {
					t.Errorf("the session was not ended in 5s of going idle once its call had ended")
				}
			})
		}
	}
}

// panicking is a ResponseWriter that panics when the answer is written,
// as net/http's does to abort a handler (http.ErrAbortHandler).
type panicking struct{}

func (panicking) Header() http.Header        { return http.Header{} }
func (panicking) Write([]byte) (int, error)  { panic(http.ErrAbortHandler) }
func (panicking) WriteHeader(statusCode int) { panic(http.ErrAbortHandler) }

// idleSessions is a gateway in front of the demo server whose sessions
// go idle after 40ms by a clock the test moves, with a policy that denies
// web_search after slow_count (a sensitive read, here) in a session.
type idleSessions struct {
	g      *Gateway
	gw     string
	up     *httptest.Server
	rec    *recorder
	called <-chan struct{} // closed when slow_count reaches the upstream
	clock  testClock
	reads  atomic.Int64 // of clock
}

func newIdleSessions(t *testing.T) *idleSessions {
	t.Helper()
	mem := policy.NewMemoryStore(policy.MemoryOptions{})
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  slow_count: [source:sensitive]
  web_search: [sink:network]
route_rules:
  - {id: no-network-after-sensitive-read, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	is := &idleSessions{clock: testClock{t: time.Unix(1_800_000_000, 0)}}
	is.rec = &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	var up http.Handler
	up, is.called = notifyOn(is.rec, `"slow_count"`)
	is.up = httptest.NewServer(up)
	t.Cleanup(is.up.Close)
	is.g, err = New(Options{
		Upstreams:          []Upstream{{Name: "demo", URL: is.up.URL + "/mcp"}},
		VirtualServers:     []VirtualServer{{}},
		SessionIdleTimeout: 40 * time.Millisecond,
		OnSessionEnd:       mem.ForgetSession,
		now: func() time.Time {
			is.reads.Add(1)
			return is.clock.now()
		},
	}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(is.g.Handler())
	t.Cleanup(func() { closeServed(t, gw, is.g) })
	is.gw = gw.URL
	return is
}

// idle moves the sessions' clock an hour on and returns once the route
// sessions' reaper has looked at them since (it reads the clock once a
// look, and nothing else reads it meanwhile); and, if virtual, the
// virtual server has looked too.
func (is *idleSessions) idle(virtual bool) {
	is.clock.add(time.Hour)
	for from := is.reads.Load(); is.reads.Load() < from+2; {
		time.Sleep(5 * time.Millisecond)
	}
	if virtual {
		is.look()
	}
}

// look has the virtual server end its idle sessions, as it does when a
// session opens.
func (is *idleSessions) look() {
	a := is.g.virtual[""]
	a.mu.Lock()
	a.reapLocked()
	a.mu.Unlock()
}

// reapedSoon reports whether every session (and, if virtual, every
// virtual session; if graced too, only what they serve) is ended within
// 5s, the clock moving on an hour at each look.
func (is *idleSessions) reapedSoon(virtual, graced bool) bool {
	a := is.g.virtual[""]
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		is.idle(virtual)
		a.mu.Lock()
		left := 0
		for _, s := range a.sessions {
			if !graced || s.serving.Load() > 0 {
				left++
			}
		}
		a.mu.Unlock()
		if is.g.sessions.len() == 0 && (!virtual || left == 0) {
			return true
		}
	}
	return false
}

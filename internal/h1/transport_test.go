package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counted is a test server that counts the connections it accepted.
func counted(t *testing.T, h http.HandlerFunc, idle ...time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewUnstartedServer(h)
	if len(idle) > 0 {
		s.Config.IdleTimeout = idle[0]
	}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &n
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"method":%q,"body":%q}`, r.Method, b)
}

type fallbackCount struct{ n atomic.Int64 }

func (f *fallbackCount) RoundTrip(r *http.Request) (*http.Response, error) {
	f.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func post(t *testing.T, c *http.Client, url, body string) string {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReuse: sequential and concurrent calls share pooled connections,
// and every answer is the one to its own request.
func TestReuse(t *testing.T) {
	s, conns := counted(t, echo)
	fb := &fallbackCount{}
	c := &http.Client{Transport: &Transport{Fallback: fb}}
	for i := range 50 {
		if got, want := post(t, c, s.URL+"/mcp", fmt.Sprint(i)), fmt.Sprintf(`{"method":"POST","body":"%d"}`, i); got != want {
			t.Fatalf("call %d: %s, want %s", i, got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("50 sequential calls opened %d connections, want 1", n)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				body := fmt.Sprintf("%d-%d", g, i)
				if got, want := post(t, c, s.URL, body), fmt.Sprintf(`{"method":"POST","body":%q}`, body); got != want {
					t.Errorf("%s", got)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n > 17 {
		t.Errorf("16 concurrent callers opened %d connections, want at most 17", n)
	}
	if fb.n.Load() != 0 {
		t.Errorf("plain HTTP went to the fallback %d times", fb.n.Load())
	}
}

// TestWireSameAsNetHTTP: the request an upstream receives is the one
// net/http's Transport sends (but for the Accept-Encoding it adds to ask
// for gzip it then undoes).
func TestWireSameAsNetHTTP(t *testing.T) {
	dumps := make(chan string, 2)
	s, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		d, _ := httputil.DumpRequest(r, true)
		dumps <- string(d)
	})
	send := func(rt http.RoundTripper) string {
		req, _ := http.NewRequest("POST", s.URL+"/mcp/x?y=1", strings.NewReader(`{"jsonrpc":"2.0"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Session-Id", "abc")
		req.Header.Add("X-Multi", "1")
		req.Header.Add("X-Multi", "2")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-dumps
	}
	if ours, std := send(&Transport{Fallback: http.DefaultTransport}), send(http.DefaultTransport); ours != std {
		t.Errorf("request on the wire differs:\nh1:\n%s\nnet/http:\n%s", ours, std)
	}
}

// TestServerClosedIdle: a pooled connection the server closed while idle
// is not used; the call goes through on a fresh one.
func TestServerClosedIdle(t *testing.T) {
	s, conns := counted(t, echo, 100*time.Millisecond)
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	for i := range 3 {
		post(t, c, s.URL, "x")
		time.Sleep(checkAfter + 150*time.Millisecond) // the server closes the idle connection
		if i > 0 && conns.Load() != int64(i+1) {
			t.Fatalf("call %d: %d connections", i, conns.Load())
		}
	}
}

// TestStreamsStayStreams: an SSE response is read event by event while
// the server is still writing it.
func TestStreamsStayStreams(t *testing.T) {
	next := make(chan struct{})
	s, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			if i < 2 {
				<-next
			}
		}
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	resp, err := c.Post(s.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		br.ReadString('\n')
		if i < 2 {
			next <- struct{}{} // the next event is written only now
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the stream: %v, want EOF", err)
	}
}

// TestCancel: cancelling a call stops its stream with the context's
// error, and the connection is not pooled.
func TestCancel(t *testing.T) {
	gone := make(chan struct{})
	s, conns := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/echo" {
			echo(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL, strings.NewReader("{}"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "data: 1") {
		t.Fatalf("first event: %q, %v", buf[:n], err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream never saw the call end")
	}
	post(t, c, s.URL+"/echo", "again")
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the cancelled one is not reused)", n)
	}
	// Cancelled before the answer: the context's error.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, "POST", s.URL+"/echo", strings.NewReader("{}"))
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}

// TestEarlyCloseAndConnectionClose: a body closed before its end, and an
// answer with Connection: close, each drop their connection; the next
// call opens another.
func TestEarlyCloseAndConnectionClose(t *testing.T) {
	s, conns := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		fmt.Fprint(w, strings.Repeat("x", 10000))
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	if b := post(t, c, s.URL+"/close", ""); len(b) != 10000 {
		t.Fatalf("got %d bytes", len(b))
	}
	if b := post(t, c, s.URL, ""); len(b) != 10000 {
		t.Fatalf("got %d bytes", len(b))
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

// TestNoBodyFreesConnection: a 202 with no body gives its connection back
// even if the caller only closes the body.
func TestNoBodyFreesConnection(t *testing.T) {
	s, conns := counted(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	for range 5 {
		resp, err := c.Post(s.URL, "application/json", strings.NewReader("{}"))
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatal(resp, err)
		}
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestFallback: https and upgrades are not this transport's.
func TestFallback(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(echo))
	t.Cleanup(s.Close)
	fb := &fallbackCount{}
	tr := &Transport{Fallback: fb}
	req, _ := http.NewRequest("GET", s.URL, nil)
	if _, err := tr.RoundTrip(req); err == nil || fb.n.Load() != 1 {
		// The default transport does not trust the test certificate:
		// the error is the fallback's.
		t.Errorf("https: %v, fallback used %d times", err, fb.n.Load())
	}
	req, _ = http.NewRequest("GET", "http://127.0.0.1:1/", nil)
	req.Header.Set("Upgrade", "websocket")
	tr.RoundTrip(req)
	if fb.n.Load() != 2 {
		t.Errorf("upgrade: fallback used %d times, want 2", fb.n.Load())
	}
	// A request the fallback would send through a proxy goes there.
	tr.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.1:1") }
	req, _ = http.NewRequest("GET", "http://127.0.0.1:1/", nil)
	tr.RoundTrip(req)
	if fb.n.Load() != 3 {
		t.Errorf("proxied: fallback used %d times, want 3", fb.n.Load())
	}
}

// TestHeadBounded: an upstream that sends headers without end gets an
// error, not all the memory.
func TestHeadBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Junk: " + strings.Repeat("a", 1000) + "\r\n"
		for range 2000 { // 2 MB of headers
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}()
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	if _, err := c.Get("http://" + ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Errorf("got %v, want the head-too-large error", err)
	}
}

// TestUnaskedBytes: a connection on which the upstream sent more than the
// answer (a second response nobody asked for) is not used again, and an
// upstream that sends informational responses without end gets an error.
func TestUnaskedBytes(t *testing.T) {
	addr, accepted := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if req.URL.Path == "/1xx" {
				io.WriteString(c, strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 10))
				return // without the bound, the client fails on EOF instead
			}
			// The answer, and a forged second one in the same write.
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"+
				"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
		}
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	base := "http://" + addr
	for i := range 3 {
		if got := post(t, c, base+"/", "{}"); got != "ok" {
			t.Fatalf("call %d got %q: a forged response was taken as the answer", i, got)
		}
	}
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (none reused after unasked bytes)", n)
	}
	if _, err := c.Post(base+"/1xx", "application/json", strings.NewReader("{}")); !errors.Is(err, errTooMany1xx) {
		t.Errorf("endless 1xx: %v", err)
	}
}

// TestIdleConnectionsExpire: a connection idle past IdleTimeout is closed
// even if no call comes to reach it.
func TestIdleConnectionsExpire(t *testing.T) {
	closed := make(chan struct{})
	s := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			close(closed)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	tr := &Transport{Fallback: http.DefaultTransport, IdleTimeout: 100 * time.Millisecond}
	post(t, &http.Client{Transport: tr}, s.URL, "x")
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle connection was never closed")
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.idle) != 0 {
		t.Errorf("pool after the sweep: %v", tr.idle)
	}
}

// TestEarlyCloseMidStream: a body closed while the upstream is still
// writing it drops its connection; were it reused, the rest of the first
// answer would be read as the second.
func TestEarlyCloseMidStream(t *testing.T) {
	s, conns := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/echo" {
			echo(w, r)
			return
		}
		fmt.Fprint(w, "0123456789")
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		fmt.Fprint(w, "the rest")
	})
	c := &http.Client{Transport: &Transport{}}
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := post(t, c, s.URL+"/echo", "x"); got != `{"method":"POST","body":"x"}` {
		t.Errorf("second call: %s", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestInvalidRequestNotSent: a request net/http's Transport refuses — a
// method that is not a token, a header name that is not one, a value
// with a line break or another control byte — is refused here too, with
// net/http's error and before a byte reaches the upstream. Request.Write,
// which Transport writes with, checks none of them: a method went on the
// wire as it was (its line breaks a header the caller never set), a
// value's line break became a space and a bad name was left out, so the
// upstream got another request than the one made.
func TestInvalidRequestNotSent(t *testing.T) {
	received := make(chan string, 16)
	addr, _ := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			received <- fmt.Sprintf("%s %v", req.Method, req.Header)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	base := "http://" + addr
	for _, tc := range []struct {
		name string
		edit func(*http.Request)
	}{
		{"method", func(r *http.Request) { r.Method = "GET / HTTP/1.1\r\nX-Smuggled: 1\r\nX-Rest:" }},
		{"header value with CRLF", func(r *http.Request) { r.Header.Set("X-Tenant", "a\r\nX-Smuggled: 1") }},
		{"header value with NUL", func(r *http.Request) { r.Header.Set("X-Tenant", "a\x00b") }},
		{"header name", func(r *http.Request) { r.Header["X Tenant"] = []string{"a"} }},
		{"GET header value", func(r *http.Request) {
			r.Method, r.Body, r.ContentLength = http.MethodGet, nil, 0
			r.Header.Set("X-Tenant", "a\nb")
		}},
		{"trailer", func(r *http.Request) {
			r.TransferEncoding = []string{"chunked"}
			r.Trailer = http.Header{"X-T": {"a\nb"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader("{}"))
				tc.edit(req)
				return req
			}
			_, want := (&http.Transport{}).RoundTrip(mk())
			if want == nil {
				t.Fatalf("net/http sent it: %s", <-received)
			}
			resp, err := (&Transport{}).RoundTrip(mk())
			if err == nil {
				resp.Body.Close()
				t.Fatalf("sent; the upstream got %s; want net/http's error %q", <-received, want)
			}
			if err.Error() != want.Error() {
				t.Errorf("got error %q, want net/http's %q", err, want)
			}
		})
	}
	// What either sends arrives as made.
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader("{}"))
	req.Header.Set("X-Tenant", "a\tb")
	resp, err := (&Transport{}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := <-received, "POST map[Content-Length:[2] User-Agent:[Go-http-client/1.1] X-Tenant:[a\tb]]"; got != want {
		t.Errorf("the upstream got %q, want %q", got, want)
	}
	select {
	case got := <-received:
		t.Errorf("the upstream also got %s", got)
	default:
	}
}

// TestUnaskedSwitchNotPooled: after a 101 Switching Protocols to a
// request that asked for no upgrade, what follows on the connection is
// not HTTP; as net/http's Transport, which pools no connection after a
// 1xx final answer, the next call goes on another one.
func TestUnaskedSwitchNotPooled(t *testing.T) {
	addr, accepted := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		switched := false
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			switch {
			case switched:
				// The connection speaks another protocol now: whatever
				// comes is answered with what it means there.
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
			case req.URL.Path == "/switch":
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
				switched = true
			default:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	base := "http://" + addr
	for name, rt := range map[string]http.RoundTripper{"net/http": &http.Transport{}, "h1": &Transport{}} {
		before := accepted.Load()
		c := &http.Client{Transport: rt}
		resp, err := c.Post(base+"/switch", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: got %d, want the 101", name, resp.StatusCode)
		}
		if got := post(t, c, base+"/next", "{}"); got != "ok" {
			t.Errorf("%s: the next call got %q, want ok: it went on the switched connection", name, got)
		}
		if n := accepted.Load() - before; n != 2 {
			t.Errorf("%s: %d connections, want 2", name, n)
		}
	}
}

// hookConn is a connection whose writes go through write first.
type hookConn struct {
	net.Conn
	write func(c net.Conn, p []byte) (int, error)
}

func (c *hookConn) Write(p []byte) (int, error) { return c.write(c.Conn, p) }

// TestCancelledNotRetried: a call cancelled while its request was being
// written on a pooled connection (the cancellation stops the write before
// a byte left) is not written again on another connection: the upstream
// would run a call nobody waits for any more, a tools/call the agent
// cancelled.
func TestCancelledNotRetried(t *testing.T) {
	var pair sync.WaitGroup
	pair.Add(2)
	s, conns := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pair" {
			pair.Done()
			pair.Wait() // two calls at once: two connections in the pool
		}
		echo(w, r)
	})
	var (
		mu     sync.Mutex
		cancel context.CancelFunc // set: the next write is the one the cancellation stops
		ctx    context.Context
		late   int // writes begun after the cancellation
	)
	tr := &Transport{Dial: func(dctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dialer.DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &hookConn{Conn: nc, write: func(nc net.Conn, p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case cancel != nil:
				cancel()
				cancel = nil
				return 0, errors.New("write: i/o timeout") // as the cancellation's deadline makes it
			case ctx != nil && ctx.Err() != nil:
				late++
			}
			return nc.Write(p)
		}}, nil
	}}
	c := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { post(t, c, s.URL+"/pair", "{}") })
	}
	wg.Wait()
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	callCtx, cancelCall := context.WithCancel(context.Background())
	defer cancelCall()
	mu.Lock()
	ctx, cancel = callCtx, cancelCall
	mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/call", strings.NewReader(`{"method":"tools/call"}`))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if late > 0 {
		t.Errorf("the cancelled request was written again %d times", late)
	}
}

// TestServerClosesUnasked: a server that closes each connection after its
// answer without saying Connection: close fails the call that reuses a
// connection of its once; its connections are checked at every reuse
// after that, however short their idle time, so no further call fails.
// Before, every call reusing one within checkAfter failed.
func TestServerClosesUnasked(t *testing.T) {
	addr, _ := rawUpstream(t, func(nc net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(nc))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	failed := 0
	for range 10 {
		resp, err := c.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			failed++
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		time.Sleep(20 * time.Millisecond) // well within checkAfter: the close has arrived
	}
	if failed > 1 {
		t.Errorf("%d of 10 calls failed on connections the server had closed, want at most the first reuse", failed)
	}
}

// rawUpstream listens on 127.0.0.1:0 and serves each connection it
// accepts with serve, on a goroutine of its own, closing it after; it
// returns the address and the count of connections accepted.
func rawUpstream(t *testing.T, serve func(c net.Conn)) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String(), &accepted
}

// TestCloserForgiven: an upstream noted once as closing a pooled
// connection unasked (a restart, or its idle timeout meeting a reuse)
// had its connections checked (a syscall) at every reuse for as long as
// the gateway ran, however long it kept them open after. Once enough
// checked reuses in a row find the connection open, it is no longer
// checked under checkAfter.
func TestCloserForgiven(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	// Noted at a reuse at once (a restart), or at one past checkAfter (an
	// idle timeout of 5 s met): quick reuses found open forgive either.
	for _, idle := range []time.Duration{0, 5 * time.Second} {
		tr := &Transport{Fallback: http.DefaultTransport}
		c := &http.Client{Transport: tr}
		tr.noteCloser(addr, idle)
		for range 2 * closerForgiven {
			resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		tr.mu.Lock()
		_, noted := tr.closers[addr]
		tr.mu.Unlock()
		if noted {
			t.Errorf("noted at a reuse after %v: after %d calls on connections the upstream kept open, it is still checked at every reuse", idle, 2*closerForgiven)
		}
	}
}

// TestCloserShortIdleNotForgiven: an upstream that closes a connection
// idle for 50 ms, without saying so (its keep-alive timeout under
// checkAfter), was noted as a closer at the first call failing on one,
// then forgiven after 64 quick reuses had found their connections open:
// open because they were reused within 50 ms, which says nothing of a
// reuse after longer. The next call after 50 ms idle failed again, one
// in every burst of calls. A check counts towards forgiveness only at an
// idle time a connection of the upstream was found closed at.
func TestCloserShortIdleNotForgiven(t *testing.T) {
	addr, _ := rawUpstream(t, func(nc net.Conn) {
		br := bufio.NewReader(nc)
		for {
			nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			req, err := http.ReadRequest(br)
			if err != nil {
				return // idle 50 ms: closed, unasked
			}
			nc.SetReadDeadline(time.Time{})
			io.Copy(io.Discard, req.Body)
			io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := &http.Client{Transport: &Transport{Fallback: http.DefaultTransport}}
	call := func() error {
		resp, err := c.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	failed := 0
	for round := range 3 {
		for range 2 * closerForgiven {
			if err := call(); err != nil {
				failed++
			}
		}
		time.Sleep(150 * time.Millisecond) // past the upstream's 50 ms, within checkAfter
		if err := call(); err != nil {
			failed++
			t.Logf("round %d: the call after 150 ms idle failed: %v", round, err)
		}
	}
	if failed > 1 {
		t.Errorf("%d calls failed on connections the upstream had closed, want at most the first", failed)
	}
}

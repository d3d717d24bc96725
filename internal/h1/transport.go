// Package h1 is an HTTP/1.1 client transport for plain-HTTP upstreams that
// runs each exchange on the caller's goroutine.
//
// net/http's Transport gives every connection a reader and a writer
// goroutine and hands each request and response between them and the
// caller: three goroutines and their wake-ups per call. For a gateway
// whose upstream is a plain-HTTP neighbour (a sidecar, a pod in the same
// cluster) that hand-off is a large part of the hop's CPU. Transport
// writes the request and reads the response on the calling goroutine with
// net/http's own wire code (Request.Write, ReadResponse), so what goes on
// the wire is what net/http would send, and pools the connections. The
// head of a plain POST is written by writeRequest, byte for byte what
// Request.Write writes, and a plain answer with a Content-Length is read
// by readResponse, into what ReadResponse makes of it.
// Anything else — TLS, upgrades, Expect: 100-continue — goes to Fallback.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Transport is an http.RoundTripper. Its zero value sends what it does not
// serve through http.DefaultTransport.
type Transport struct {
	// Fallback serves what Transport does not: https, upgrades, requests
	// expecting 100-continue, CONNECT, and requests Proxy sends through a
	// proxy; nil is http.DefaultTransport.
	Fallback http.RoundTripper
	// Proxy, if set, is the fallback's proxy choice: a request it sends
	// through a proxy goes to Fallback.
	Proxy func(*http.Request) (*url.URL, error)
	// Dial opens a connection; nil is a net.Dialer with a 10 s timeout and
	// 30 s keep-alives.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost bounds the idle connections kept per host (0: 256).
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for longer (0: 90 s).
	IdleTimeout time.Duration

	mu       sync.Mutex
	idle     map[string][]*conn // LIFO per host:port: the oldest first
	sweeping bool               // a sweep of expired idle connections is due
	// closers are the host:ports that closed a pooled connection unasked
	// soon after an answer: their connections are checked at every reuse,
	// however short their idle time (checkAfter), until closerForgiven
	// checks in a row find them open.
	closers map[string]closer
}

// A closer is what is known of a host:port noted as closing unasked.
type closer struct {
	// after is the shortest idle time a connection was found closed at:
	// when it is under checkAfter, a check of one reused sooner tells
	// nothing of the upstream's idle timeout, and counts for nothing.
	after time.Duration
	open  int // checks at or past after in a row that found one open
}

type conn struct {
	addr  string // the pool's key
	nc    net.Conn
	lim   *limited // what br reads from: nc, bounded while a head is read
	br    *bufio.Reader
	bw    *bufio.Writer
	sent  countWriter // what bw writes to: nc, counted for each request
	since time.Time   // when it went idle
	// abort unblocks whatever the connection is doing (c.unblock, made
	// once: a func value made for each exchange would be an allocation).
	abort func()
}

func (c *conn) unblock() { c.nc.SetDeadline(time.Unix(1, 0)) }

var dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		if t.Fallback == nil {
			return http.DefaultTransport.RoundTrip(req)
		}
		return t.Fallback.RoundTrip(req)
	}
	if err := validRequest(req); err != nil {
		closeBody(req)
		return nil, err
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		// Cancelled before it began: a pooled connection and a quick
		// server could otherwise answer before the cancellation is seen.
		closeBody(req)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		c, reused, err := t.get(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err, retry := t.exchange(ctx, c, req, reused)
		if err == nil {
			return resp, nil
		}
		if retry && attempt == 0 && ctx.Err() == nil {
			// A pooled connection the server had closed, found before
			// a byte of the request left: the request never reached it.
			// Not when the write failed for the cancellation (its
			// deadline): written on another, a call nobody waits for
			// would run.
			continue
		}
		closeBody(req)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
}

// handles reports whether req is a plain HTTP/1.1 exchange Transport runs.
func (t *Transport) handles(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" || req.Method == http.MethodConnect {
		return false
	}
	if req.Header.Get("Upgrade") != "" || strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return false
	}
	if t.Proxy != nil {
		if u, err := t.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// validRequest refuses what net/http's Transport refuses before it sends
// anything: a header or trailer field whose name is not a token or whose
// value holds a line break or another control byte, and a method that is
// not a token. Request.Write checks none of these: it writes the method
// as it is (its line breaks start headers nobody set), turns a line break
// in a value into a space and leaves a bad name out, so the upstream would
// get another request than the one made.
func validRequest(req *http.Request) error {
	if req.Header == nil {
		return errors.New("http: nil Request.Header")
	}
	if err := validFields(req.Header); err != "" {
		return fmt.Errorf("net/http: invalid header %s", err)
	}
	if err := validFields(req.Trailer); err != "" {
		return fmt.Errorf("net/http: invalid trailer %s", err)
	}
	if req.Method != "" && strings.IndexFunc(req.Method, notToken) >= 0 {
		return fmt.Errorf("net/http: invalid method %q", req.Method)
	}
	return nil
}

// validFields is net/http's validateHeaders: what is wrong with h, or "".
func validFields(h http.Header) string {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Sprintf("field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				// Not the value itself: it may be a credential.
				return fmt.Sprintf("field value for %q", k)
			}
		}
	}
	return ""
}

func notToken(r rune) bool { return !httpguts.IsTokenRune(r) }

// exchange writes req on c and reads the response head. retry says the
// request was not sent at all on a reused connection (the server had
// closed it), so it may go again on another.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request, reused bool) (*http.Response, error, bool) {
	// A cancelled request unblocks whatever the connection is doing; the
	// connection is then closed, never pooled.
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abort)
	}
	sent := &c.sent
	*sent = countWriter{w: c.nc}
	c.bw.Reset(sent)
	err := writeRequest(c.bw, req)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		stop()
		c.nc.Close()
		return nil, err, reused && sent.n == 0 && req.GetBody != nil && rewind(req)
	}
	for informational := 0; ; informational++ {
		c.lim.n = maxHead // as net/http's MaxResponseHeaderBytes: an upstream cannot make the head take all memory
		resp, err := readResponse(c.br, req)
		read := maxHead - c.lim.n
		c.lim.n = -1
		if err != nil {
			stop()
			c.nc.Close()
			if reused && informational == 0 && read == 0 && ctx.Err() == nil && closedByPeer(err) {
				// The server had closed the connection it left open
				// after its last answer, or closed it as this request
				// came: check its connections at every reuse from now on.
				// This call is not sent again (the server may have read it).
				t.noteCloser(c.addr, time.Since(c.since))
			}
			return nil, err, false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if informational == max1xx {
				stop()
				c.nc.Close()
				return nil, errTooMany1xx, false
			}
			continue // informational (103 Early Hints): the answer follows
		}
		// After a 101 (asked for or not: an upgrade goes to Fallback)
		// the connection speaks another protocol; net/http's Transport
		// pools none after a 1xx final answer either.
		keep := !resp.Close && !req.Close && resp.StatusCode >= 200
		if resp.Body == http.NoBody {
			// Nothing to read: the connection is free now.
			(&body{c: c, t: t, stop: stop, keep: keep}).finish(true)
			return resp, nil, false
		}
		resp.Body = &body{rc: resp.Body, c: c, t: t, stop: stop, keep: keep, ctx: ctx}
		return resp, nil, false
	}
}

// rewind gives req a fresh body for another attempt.
func rewind(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	b, err := req.GetBody()
	if err != nil {
		return false
	}
	req.Body = b
	return true
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// get returns an idle connection to addr that is still open, or a new one.
func (t *Transport) get(ctx context.Context, addr string) (*conn, bool, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[addr]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		_, check := t.closers[addr]
		t.mu.Unlock()
		idle := now.Sub(c.since)
		if idle > t.idleTimeout() || c.br.Buffered() > 0 {
			c.nc.Close()
			continue
		}
		if check || idle > checkAfter {
			open := idleOpen(c.nc)
			if check {
				t.checkedCloser(addr, idle, open)
			}
			if !open {
				c.nc.Close()
				continue
			}
		}
		return c, true, nil
	}
	dial := t.Dial
	if dial == nil {
		dial = dialer.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	lim := &limited{r: nc, n: -1}
	c := &conn{addr: addr, nc: nc, lim: lim, br: bufio.NewReaderSize(lim, 4096), bw: bufio.NewWriterSize(nc, 4096)}
	c.abort = c.unblock
	return c, false, nil
}

// put returns c to the pool, or closes it if the pool is full.
func (t *Transport) put(addr string, c *conn) {
	c.since = time.Now()
	max := t.MaxIdlePerHost
	if max <= 0 {
		max = 256
	}
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	if len(t.idle[addr]) < max {
		t.idle[addr] = append(t.idle[addr], c)
		c = nil
	}
	if !t.sweeping {
		t.sweeping = true
		time.AfterFunc(t.idleTimeout(), t.sweep)
	}
	t.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// sweep closes the connections idle for longer than IdleTimeout (those a
// busy pool never reaches, at the bottom of its stacks), and comes back
// while any connection is idle.
func (t *Transport) sweep() {
	now := time.Now()
	var expired []*conn
	t.mu.Lock()
	for addr, list := range t.idle {
		n := 0
		for n < len(list) && now.Sub(list[n].since) > t.idleTimeout() {
			n++
		}
		expired = append(expired, list[:n]...)
		if rest := list[n:]; len(rest) > 0 {
			t.idle[addr] = append(list[:0], rest...)
		} else {
			delete(t.idle, addr)
		}
	}
	t.sweeping = len(t.idle) > 0
	if t.sweeping {
		time.AfterFunc(t.idleTimeout(), t.sweep)
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return 90 * time.Second
}

// CloseIdleConnections closes the pooled connections, and Fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// body is a response body; read to its end, it gives the connection back.
type body struct {
	ctx  context.Context
	rc   io.ReadCloser
	c    *conn
	t    *Transport
	stop func() bool
	keep bool
	mu   sync.Mutex
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
		if err != io.EOF && b.ctx.Err() != nil {
			err = b.ctx.Err() // the deadline that stopped the read was the cancellation
		}
	}
	return n, err
}

// Close before the end drops the connection: what is left of the
// response is not read to reuse it.
func (b *body) Close() error {
	b.finish(false)
	return nil
}

func (b *body) finish(eof bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if eof && b.stop() && b.keep {
		b.t.put(b.c.addr, b.c)
		return
	}
	b.stop()
	b.c.nc.Close()
}

// checkAfter is how long a connection must have been idle to be checked
// before reuse (a syscall): servers close idle connections after seconds
// (Node 5 s, nginx 75 s), not as soon as they have answered — one that
// means to says Connection: close. One that closes without saying so
// fails the call that reuses its connection, once: its connections are
// checked at every reuse after that (noteCloser).
const checkAfter = 250 * time.Millisecond

// noteCloser records that addr closed a pooled connection idle for idle
// unasked.
func (t *Transport) noteCloser(addr string, idle time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closers == nil {
		t.closers = make(map[string]closer)
	}
	if c, ok := t.closers[addr]; ok {
		t.closers[addr] = closer{after: min(c.after, idle)}
	} else if len(t.closers) < maxClosers {
		t.closers[addr] = closer{after: idle}
	}
}

// checkedCloser counts a check of a connection to addr, idle for idle,
// noted as a closer: one that found it closed starts the count again
// (and lowers the idle time it closes at), one that found it open counts
// if the connection was idle at least as long as one found closed, or if
// none was found closed sooner than checkAfter (its idle timeout met a
// reuse checked anyway: Node's 5 s, say). After
// closerForgiven in a row addr is no longer checked at every reuse: a
// server restarted once, or whose idle timeout met one reuse, keeps its
// connections open after that, and checking each reuse of a healthy
// upstream's is a syscall on every call. One whose idle timeout is under
// checkAfter is never forgiven by reuses quicker than it
// (TestCloserShortIdleNotForgiven).
func (t *Transport) checkedCloser(addr string, idle time.Duration, open bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.closers[addr]
	switch {
	case !ok:
	case !open:
		t.closers[addr] = closer{after: min(c.after, idle)}
	case idle < c.after && c.after < checkAfter:
		// It closes connections sooner than they are checked anyway:
		// one reused sooner than that says nothing.
	case c.open+1 >= closerForgiven:
		delete(t.closers, addr)
	default:
		c.open++
		t.closers[addr] = c
	}
}

// closerForgiven is how many checked reuses in a row must find a noted
// closer's connections open for it to be checked as any other again.
const closerForgiven = 64

// closedByPeer reports whether err is the end a server's close makes.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// maxClosers bounds the host:ports noted as closing unasked.
const maxClosers = 1024

// maxHead bounds a response's status line and headers.
const maxHead = 1 << 20

// limited reads from r at most n bytes more (n < 0: no bound).
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeadTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// max1xx bounds the informational responses before the answer, as
// net/http does.
const max1xx = 5

var errTooMany1xx = errors.New("h1: the upstream sent too many 1xx responses")

var errHeadTooLarge = errors.New("h1: the upstream's response head is over 1 MiB")

type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

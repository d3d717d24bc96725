package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// An SSEDialer connects to an MCP server over the legacy HTTP+SSE
// transport of protocol version 2024-11-05 as a client: a GET opens an
// event stream whose first event, "endpoint", names the URL to POST
// messages to, and "message" events carry the server's messages. The zero
// value is not usable; URL must be set. A dialer may be used concurrently
// and its fields must not change once Dial has been called.
type SSEDialer struct {
	// URL is the server's SSE endpoint, e.g. "https://mcp.example.com/sse".
	URL string
	// Header is added to the GET and to every POST, e.g. for
	// Authorization. Nil adds nothing.
	Header http.Header
	// Client sends the requests. Nil means a client of the Conn's own with
	// connect and TLS handshake timeouts but no overall timeout; its idle
	// connections are closed with the Conn.
	Client *http.Client
	// MaxMessageBytes bounds the data of one event of the stream: a
	// longer event ends the stream, and with it the session, with an
	// error wrapping a *[TooLongError]. Zero means
	// [DefaultMaxMessageBytes].
	MaxMessageBytes int64
	// WriteStall, if positive, bounds each POST of a Write by progress:
	// the server must take some of the body, and once it has all of it
	// answer, within WriteStall each time, or Write fails with an error
	// wrapping [ErrWriteStalled]. Without it, a Write whose ctx never
	// ends (a relay's, for as long as its client stays) waits on a
	// server that never answers for good. Zero sets no bound.
	WriteStall time.Duration
}

// ErrWriteStalled is why a Write fails whose peer made no progress on it
// for the Conn's WriteStall.
var ErrWriteStalled = errors.New("transport: the upstream made no progress on a write")

var _ Dialer = (*SSEDialer)(nil)

// Dial opens the event stream and waits, until ctx is done, for the
// endpoint event. The endpoint must have the same scheme, host and port
// as d.URL, so that a server cannot send the configured headers, which
// may carry credentials, elsewhere.
//
// On the Conn, Write POSTs the message and waits for the status; a
// request that fails there is answered through Read with a JSON-RPC error
// of code [UpstreamErrorCode], a notification or response makes Write
// return the error. Read returns an error wrapping io.EOF once the server
// ends the stream: the session is over, as this transport cannot resume.
func (d *SSEDialer) Dial(ctx context.Context) (Conn, error) {
	u, err := httpParseURL(d.URL)
	if err != nil {
		return nil, err
	}
	c := &sseClientConn{
		safeURL:    httpRedactURL(u),
		header:     d.Header.Clone(),
		client:     d.Client,
		maxMessage: d.MaxMessageBytes,
		stall:      d.WriteStall,
		incoming:   make(chan []byte),
		ended:      make(chan struct{}),
	}
	if c.client == nil {
		c.client, c.ownClient = httpStreamingClient(), true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.open(ctx, u); err != nil {
		c.cancel()
		if c.ownClient {
			c.client.CloseIdleConnections()
		}
		return nil, err
	}
	return c, nil
}

// sseClientConn is the client side of one legacy HTTP+SSE session.
type sseClientConn struct {
	safeURL    string
	header     http.Header
	client     *http.Client
	ownClient  bool
	maxMessage int64         // of one event's data; zero: the default
	stall      time.Duration // SSEDialer.WriteStall
	endpoint   string        // where messages are POSTed; set by open
	safeEP     string        // endpoint as named in errors sent downstream
	incoming   chan []byte
	ended      chan struct{} // closed when the event stream has ended
	endErr     error         // why; written before ended is closed
	ctx        context.Context
	cancel     context.CancelFunc

	mu     sync.Mutex // guards the fields below
	wg     sync.WaitGroup
	closed bool
}

var _ Conn = (*sseClientConn)(nil)

// open sends the GET, reads up to the endpoint event and starts the
// goroutine that delivers the rest of the stream.
func (c *sseClientConn) open(ctx context.Context, u *url.URL) error {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	httpCopyHeader(req.Header, c.header)
	req.Header.Set("Accept", "text/event-stream")
	// Until the endpoint is known the wait is Dial's; after, the Conn's.
	stop := context.AfterFunc(ctx, c.cancel)
	defer stop()

	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("transport: GET %s: %w", c.safeURL, sseDialErr(ctx, err))
	}
	if resp.StatusCode != http.StatusOK || !httpIsEventStream(resp) {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpMaxErrorBody))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("transport: GET %s: got content type %q, want text/event-stream", c.safeURL, resp.Header.Get("Content-Type"))
		}
		serr, _ := httpStatusFailure(c.safeURL, resp, body)
		return serr
	}
	r := NewSSEReader(resp.Body)
	r.MaxDataBytes = c.maxMessage
	for {
		ev, err := r.Next()
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("transport: GET %s: stream ended before the endpoint event: %w", c.safeURL, sseDialErr(ctx, err))
		}
		if ev.Event != "endpoint" {
			continue
		}
		ep, err := u.Parse(strings.TrimSpace(string(ev.Data)))
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("transport: %s: bad endpoint %q: %w", c.safeURL, ev.Data, err)
		}
		if ep.Scheme != u.Scheme || ep.Host != u.Host {
			resp.Body.Close()
			return fmt.Errorf("transport: %s: endpoint %s is on another origin", c.safeURL, httpRedactURL(ep))
		}
		c.endpoint, c.safeEP = ep.String(), httpRedactURL(ep)
		break
	}
	if !stop() {
		resp.Body.Close()
		return fmt.Errorf("transport: GET %s: %w", c.safeURL, ctx.Err())
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer resp.Body.Close()
		c.endErr = c.stream(r)
		close(c.ended)
	}()
	return nil
}

// sseDialErr prefers the Dial context's error to the one it caused.
func sseDialErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return httpCause(err)
}

// stream delivers message events until the stream ends, and returns why.
func (c *sseClientConn) stream(r *SSEReader) error {
	for {
		ev, err := r.Next()
		if err != nil {
			if c.ctx.Err() != nil {
				return ErrClosed
			}
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return fmt.Errorf("transport: event stream from %s ended: %w", c.safeURL, httpCause(err))
		}
		if (ev.Event != "" && ev.Event != "message") || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		if !c.deliver(ev.Data) {
			return ErrClosed
		}
	}
}

func (c *sseClientConn) deliver(msg []byte) bool {
	select {
	case c.incoming <- msg:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *sseClientConn) Read(ctx context.Context) ([]byte, error) {
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.ended:
		return nil, c.endErr
	case <-c.ctx.Done():
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *sseClientConn) Write(ctx context.Context, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	envs, batch, err := httpParseMessage(msg)
	if err != nil {
		return fmt.Errorf("transport: message for %s is not JSON-RPC: %w", c.safeEP, err)
	}
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	select {
	case <-c.ended:
		return c.endErr
	default:
	}
	ids := httpRequestIDs(envs)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.ctx, func() { cancel(nil) })
	defer stop()
	var reqBody io.Reader = bytes.NewReader(msg)
	if c.stall > 0 {
		t := time.AfterFunc(c.stall, func() {
			cancel(fmt.Errorf("%w: no progress on a POST to %s for %v", ErrWriteStalled, c.safeEP, c.stall))
		})
		defer t.Stop()
		reqBody = &progressReader{r: reqBody, progress: func() { t.Reset(c.stall) }}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, reqBody)
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	req.ContentLength = int64(len(msg))
	httpCopyHeader(req.Header, c.header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if c.ctx.Err() != nil {
			return ErrClosed
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if len(ids) == 0 {
			return fmt.Errorf("transport: POST %s: %w", c.safeEP, httpCause(err))
		}
		c.failLater(httpErrorResponses(ids, batch, fmt.Sprintf("upstream %s unreachable: %v", c.safeEP, httpCause(err)), nil))
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, httpMaxErrorBody))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	serr, data := httpStatusFailure(c.safeEP, resp, body)
	if len(ids) == 0 {
		return serr
	}
	m := fmt.Sprintf("upstream %s returned HTTP %d %s", c.safeEP, resp.StatusCode, http.StatusText(resp.StatusCode))
	if serr.Message != "" {
		m += ": " + serr.Message
	}
	c.failLater(httpErrorResponses(ids, batch, m, data))
	return nil
}

// failLater delivers a made-up error response from a goroutine of its
// own, as Write must not wait for a Read.
func (c *sseClientConn) failLater(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.deliver(msg)
	}()
}

// Close stops the event stream, which ends the session on the server.
func (c *sseClientConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.ownClient {
		c.client.CloseIdleConnections()
	}
	return nil
}

// progressReader calls progress after each read that returned bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	return n, err
}

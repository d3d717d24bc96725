package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// wsSubprotocol is offered by WSDialer and chosen by AcceptWS when the
	// client offers it.
	wsSubprotocol = "mcp"
	// wsPingInterval is how often AcceptWS's side pings; a peer that has
	// not answered for two intervals is taken for dead.
	wsPingInterval = 30 * time.Second
	// wsControlWait bounds sending a ping or close frame.
	wsControlWait = 5 * time.Second
	// wsMaxHandshakeBytes bounds what WSDialer reads of the server's
	// handshake answer, as net/http's Transport bounds a response header.
	wsMaxHandshakeBytes = 1 << 20
)

// A WSDialer opens a WebSocket connection to an MCP server, offering the
// "mcp" subprotocol, and carries one JSON-RPC message per text frame. URL
// is required. A WSDialer may be used by several goroutines at once.
type WSDialer struct {
	// URL is the ws:// or wss:// address of the server.
	URL string
	// Header is sent with the opening handshake, for instance to carry
	// Authorization; nil sends none beyond the handshake's own.
	Header http.Header
	// MaxMessageBytes bounds one message read from the server: a longer
	// one fails Read with a *[TooLongError] and closes the connection
	// with status 1009 (message too big). Zero means
	// [DefaultMaxMessageBytes].
	MaxMessageBytes int64
	// WriteStall, if positive, bounds each write to the server as
	// [WSAcceptOptions.WriteStall] bounds one to a client: a server that
	// reads nothing of a message for WriteStall fails the Write and the
	// connection closes. Without it, a Write whose ctx never ends (a
	// relay's, for as long as its client stays) waits for such a server
	// for good. Zero sets no bound.
	WriteStall time.Duration
}

var _ Dialer = (*WSDialer)(nil)

// Dial performs the opening handshake; ctx bounds only the handshake.
// No proxy is used. The subprotocol is offered but not required, since
// servers predating it do not echo it.
//
// A Read or Write on the returned Conn whose ctx is done, or gets done
// during the call, closes the Conn, because a WebSocket cannot resume
// after an interrupted frame.
func (d *WSDialer) Dial(ctx context.Context) (Conn, error) {
	var hc *wsHandshakeConn
	dialer := websocket.Dialer{
		HandshakeTimeout: 45 * time.Second,
		Subprotocols:     []string{wsSubprotocol},
		// gorilla reads the server's answer with http.ReadResponse, which
		// bounds its header by nothing: the handshake's reads are.
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			hc = &wsHandshakeConn{Conn: c}
			hc.left.Store(wsMaxHandshakeBytes)
			return hc, nil
		},
	}
	ws, resp, err := dialer.DialContext(ctx, d.URL, d.Header)
	if hc != nil {
		hc.left.Store(-1) // the handshake is over: frames are bounded by the read limit
		if err != nil && hc.over.Load() {
			err = fmt.Errorf("the server's handshake answer is longer than %s", sizeString(wsMaxHandshakeBytes))
		}
	}
	if err != nil {
		safe := wsSafeURL(d.URL)
		if resp != nil {
			return nil, fmt.Errorf("transport: websocket dial %s: %w (HTTP %s)", safe, err, resp.Status)
		}
		return nil, fmt.Errorf("transport: websocket dial %s: %w", safe, err)
	}
	// None is offered, so a server naming one fails the connection (RFC
	// 6455 9.1). gorilla would take up permessage-deflate whenever the
	// server names it, and its read limit counts compressed bytes: a
	// hostile server's small frame could inflate to gigabytes in Read.
	if ext := strings.TrimSpace(strings.Join(resp.Header.Values("Sec-WebSocket-Extensions"), ", ")); strings.Trim(ext, ", \t") != "" {
		ws.Close()
		return nil, fmt.Errorf("transport: websocket dial %s: the server chose extension %q, which was not offered", wsSafeURL(d.URL), ext)
	}
	c := newWSConn(ws, maxMessage(d.MaxMessageBytes), 0)
	c.writeStall = d.WriteStall
	return c, nil
}

// wsSafeURL names the server at rawURL without the credentials or keys
// its URL may carry, for errors that go downstream.
func wsSafeURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	return httpRedactURL(u)
}

// WSAcceptOptions configures [AcceptWS]. The zero value (or nil) means
// the defaults.
type WSAcceptOptions struct {
	// CheckOrigin decides whether a browser's Origin may connect; nil
	// allows only requests whose Origin matches their Host (or that have
	// no Origin).
	CheckOrigin func(*http.Request) bool
	// MaxMessageBytes bounds one message read from the client: a longer
	// one fails Read with a *[TooLongError] and closes the connection
	// with status 1009 (message too big). Zero means
	// [DefaultMaxMessageBytes].
	MaxMessageBytes int64
	// Budget, if set, is what the bytes of the client's messages are
	// held against while they are read, with whatever else the server
	// counts there (the gateway: its request bodies): a message takes
	// room as its bytes arrive, BudgetStep at a time, and gives it back
	// once the next Read starts (the reader is done with it) or the Conn
	// closes. A message that gets no room fails Read with a
	// *[BudgetError] and closes the connection with status 1013 (try
	// again later). Without it, each message is read whole however many
	// connections do so at once.
	Budget MessageBudget
	// PaceGrace and PaceRate, with Budget, bound how long a message may
	// take to arrive once it has started: PaceGrace plus its bytes at
	// PaceRate a second (a connection that stalls mid-message would hold
	// its room until the idle timeout); past that Read fails and the
	// connection closes. A zero PaceRate sets no pace.
	PaceGrace time.Duration
	PaceRate  int64
	// WriteStall, if positive, bounds each write to the client: a message
	// goes out in parts of at most 32 KiB, each of which must be sent
	// within WriteStall, or Write fails and the connection closes. A
	// client that keeps sending (pongs, requests) but reads nothing is
	// not caught by the keepalive, which only reads; without WriteStall
	// a write to it waits for as long as it likes. Zero sets no bound.
	WriteStall time.Duration
}

// A MessageBudget holds the bytes of messages being read (see
// [WSAcceptOptions.Budget]). Acquire takes n bytes, waiting as long as
// its owner allows, or fails; Release gives n back.
type MessageBudget interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// BudgetStep is how much room a message takes from a [MessageBudget] at a
// time.
const BudgetStep = 64 << 10

// A BudgetError fails a Read whose message got no room in its
// [MessageBudget].
type BudgetError struct {
	// Err is what the budget said.
	Err error
}

func (e *BudgetError) Error() string {
	return "transport: websocket message refused: no room for it among the messages being read: " + e.Err.Error()
}

func (e *BudgetError) Unwrap() error { return e.Err }

// AcceptWS upgrades an HTTP request to a WebSocket connection carrying one
// JSON-RPC message per text frame, choosing the "mcp" subprotocol if the
// client offers it. opts may be nil. On failure AcceptWS has already
// answered the request with an HTTP error.
//
// The server side pings every 30s and takes a peer that stops answering
// for twice that for dead. As with [WSDialer], a Read or Write whose ctx
// is done closes the Conn.
func AcceptWS(w http.ResponseWriter, r *http.Request, opts *WSAcceptOptions) (Conn, error) {
	c, err := acceptWS(w, r, opts, wsPingInterval)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func acceptWS(w http.ResponseWriter, r *http.Request, opts *WSAcceptOptions, pingInterval time.Duration) (*wsConn, error) {
	if opts == nil {
		opts = &WSAcceptOptions{}
	}
	up := websocket.Upgrader{
		Subprotocols: []string{wsSubprotocol},
		CheckOrigin:  opts.CheckOrigin,
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil, fmt.Errorf("transport: websocket accept: %w", err)
	}
	c := newWSConn(ws, maxMessage(opts.MaxMessageBytes), pingInterval)
	c.budget, c.grace, c.rate, c.writeStall = opts.Budget, opts.PaceGrace, opts.PaceRate, opts.WriteStall
	return c, nil
}

var _ Conn = (*wsConn)(nil)

type wsConn struct {
	ws           *websocket.Conn
	readLimit    int64         // the most one message read may have
	pingInterval time.Duration // zero: no keepalive
	closed       chan struct{} // closed by shutdown
	pinging      chan struct{} // closed when keepalive has returned; nil without keepalive

	closeOnce sync.Once

	// budget, grace and rate are WSAcceptOptions'; held is the room the
	// message last read holds in budget (Read's goroutine adds to it,
	// giveBack takes it all).
	budget     MessageBudget
	grace      time.Duration
	rate       int64
	writeStall time.Duration // WSAcceptOptions.WriteStall; zero: none
	held       atomic.Int64
	midMessage atomic.Bool // a message is being read: pongs do not push the deadline
}

func newWSConn(ws *websocket.Conn, readLimit int64, pingInterval time.Duration) *wsConn {
	// gorilla grows the message as its frames arrive, never to the
	// limit up front.
	ws.SetReadLimit(readLimit)
	c := &wsConn{ws: ws, readLimit: readLimit, pingInterval: pingInterval, closed: make(chan struct{})}
	if pingInterval > 0 {
		ws.SetPongHandler(func(string) error {
			if c.midMessage.Load() {
				return nil // the message's pace sets the deadline
			}
			return ws.SetReadDeadline(time.Now().Add(2 * pingInterval))
		})
		c.pinging = make(chan struct{})
		go c.keepalive()
	}
	return c
}

func (c *wsConn) Read(ctx context.Context) ([]byte, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.abort)
	defer stop()
	c.giveBack() // the caller is done with the message before
	if c.pingInterval > 0 {
		// Pongs, handled inside ReadMessage, push the deadline on.
		c.ws.SetReadDeadline(time.Now().Add(2 * c.pingInterval))
	}
	var msg []byte
	var err error
	if c.budget == nil {
		var r io.Reader
		if r, err = c.nextText(); err == nil {
			msg, err = io.ReadAll(r)
		}
	} else {
		msg, err = c.readWithin(ctx)
	}
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) || errors.Is(err, ErrBinaryMessage) {
			return nil, err
		}
		if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
			return nil, io.EOF
		}
		return nil, c.fail(ctx, "read", err)
	}
	return msg, nil
}

// ErrBinaryMessage fails a Read of a binary message: MCP over WebSocket
// sends each JSON-RPC message as a text message. Read as text, bytes the
// peer did not send as a message went on as one; the peer is told why,
// close 1003 (unsupported data), and the connection closed.
var ErrBinaryMessage = errors.New("transport: websocket binary message refused: MCP sends each JSON-RPC message as a text message")

// nextText returns the reader of the next message, a text message; a
// binary one closes c and gives ErrBinaryMessage, unread.
func (c *wsConn) nextText() (io.Reader, error) {
	typ, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	if typ != websocket.TextMessage {
		c.shutdownWith(websocket.CloseUnsupportedData, "binary message: send each JSON-RPC message as a text message")
		return nil, ErrBinaryMessage
	}
	return r, nil
}

// readWithin reads one message as ReadMessage does, taking room for it
// in c.budget as its bytes arrive and holding it to c's pace.
func (c *wsConn) readWithin(ctx context.Context) ([]byte, error) {
	r, err := c.nextText()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c.midMessage.Store(true)
	defer func() {
		c.midMessage.Store(false)
		if c.pingInterval > 0 {
			c.ws.SetReadDeadline(time.Now().Add(2 * c.pingInterval))
		} else {
			c.ws.SetReadDeadline(time.Time{})
		}
		select {
		case <-c.closed:
			c.giveBack() // a Close that raced the last Acquire
		default:
		}
	}()
	var msg []byte
	var reserved int64 // by this message (a Close may have given it back already)
	for {
		if int64(len(msg)) == reserved {
			if err := c.budget.Acquire(ctx, BudgetStep); err != nil {
				if ctx.Err() == nil {
					c.ws.WriteControl(websocket.CloseMessage,
						websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "the gateway holds too many messages being read; send it again later"),
						time.Now().Add(wsControlWait))
				}
				c.abort()
				return nil, &BudgetError{Err: err}
			}
			c.held.Add(BudgetStep)
			reserved += BudgetStep
			if c.rate > 0 {
				c.ws.SetReadDeadline(start.Add(c.grace + time.Duration(reserved)*time.Second/time.Duration(c.rate)))
			}
		}
		room := int(reserved - int64(len(msg)))
		msg = slices.Grow(msg, room)
		n, err := r.Read(msg[len(msg) : len(msg)+room])
		msg = msg[:len(msg)+n]
		if err == io.EOF {
			return msg, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReleaseMessage gives back the room in WSAcceptOptions.Budget that the
// message Read returned last holds, before the next Read would: for a
// caller that holds the message in that budget itself from now on.
func (c *wsConn) ReleaseMessage() {
	if c.budget != nil {
		c.giveBack()
	}
}

// giveBack returns the room the message last read holds.
func (c *wsConn) giveBack() {
	if n := c.held.Swap(0); n > 0 {
		c.budget.Release(n)
	}
}

// Write sends msg in the form [Compact] gives it, refusing one that is not
// JSON with a *[MessageError]: a peer may pass a frame on to a
// line-framed transport, which must find one message in it.
func (c *wsConn) Write(ctx context.Context, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	if err := c.check(ctx); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, c.abort)
	defer stop()
	if err := c.writeMessage(msg); err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			// A frame cut off leaves nothing to resume from.
			c.abort()
			return fmt.Errorf("transport: websocket write: the peer read nothing for %v: %w", c.writeStall, err)
		}
		return c.fail(ctx, "write", err)
	}
	return nil
}

// wsStallPart is the most of a message that must go out within one
// WriteStall: a client reading a large message slowly is not cut off,
// one reading under 32 KiB in WriteStall is taken to have stopped.
const wsStallPart = 32 << 10

// writeMessage sends msg as one text message, bounded by c.writeStall.
// The deadline is applied to every frame written after it is set, pings
// and close frames excepted (they carry their own).
func (c *wsConn) writeMessage(msg []byte) error {
	if c.writeStall <= 0 {
		return c.ws.WriteMessage(websocket.TextMessage, msg)
	}
	c.ws.SetWriteDeadline(time.Now().Add(c.writeStall))
	if len(msg) <= wsStallPart {
		return c.ws.WriteMessage(websocket.TextMessage, msg)
	}
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for len(msg) > 0 {
		part := msg[:min(len(msg), wsStallPart)]
		c.ws.SetWriteDeadline(time.Now().Add(c.writeStall))
		if _, err := w.Write(part); err != nil {
			return err
		}
		msg = msg[len(part):]
	}
	c.ws.SetWriteDeadline(time.Now().Add(c.writeStall))
	return w.Close()
}

// StatusPolicyViolation is the WebSocket close status (RFC 6455 7.4.1)
// for a peer that may no longer use the connection, which the CloseWith
// method of a Conn from [AcceptWS] or [WSDialer] sends.
const StatusPolicyViolation = websocket.ClosePolicyViolation

// CloseWith sends a close frame with status code and reason (cut to the
// 123 bytes a close frame holds) and closes the connection. After Close
// it does nothing.
func (c *wsConn) CloseWith(code int, reason string) error {
	c.shutdownWith(code, reason)
	if c.budget != nil {
		c.giveBack()
	}
	if c.pinging != nil {
		<-c.pinging
	}
	return nil
}

// Close sends a normal close frame and closes the connection.
func (c *wsConn) Close() error {
	c.shutdown(true)
	if c.budget != nil {
		c.giveBack()
	}
	if c.pinging != nil {
		<-c.pinging
	}
	return nil
}

func (c *wsConn) check(ctx context.Context) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		c.abort() // the same whether ctx ended before or during the call
		return err
	}
	return nil
}

// fail explains an I/O error: the ctx ended, the Conn was closed, or the
// connection broke.
func (c *wsConn) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		return &TooLongError{What: "websocket message", Limit: c.readLimit}
	}
	return fmt.Errorf("transport: websocket %s: %w", op, err)
}

// shutdown closes the connection without waiting for keepalive, which
// calls it too. A close frame would have to wait for a Write in progress,
// so only a plain Close sends one.
func (c *wsConn) shutdown(closeFrame bool) {
	if !closeFrame {
		c.shutdownWith(0, "")
		return
	}
	c.shutdownWith(websocket.CloseNormalClosure, "")
}

// shutdownWith is shutdown with a close frame of status code and reason,
// or none when code is zero.
func (c *wsConn) shutdownWith(code int, reason string) {
	c.closeOnce.Do(func() {
		close(c.closed)
		if code != 0 {
			const maxReason = 123 // a control frame's 125 bytes, less the status
			if len(reason) > maxReason {
				reason = reason[:maxReason]
			}
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wsControlWait))
		}
		c.ws.Close()
	})
}

// abort closes the connection at once, for a cancelled ctx.
func (c *wsConn) abort() { c.shutdown(false) }

func (c *wsConn) keepalive() {
	defer close(c.pinging)
	t := time.NewTicker(c.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
			err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsControlWait))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A long Write holds the connection; that is no reason to
				// give up on it. Read's deadline catches a dead peer.
				continue
			}
			if err != nil {
				c.abort()
				return
			}
		}
	}
}

// wsHandshakeConn is a WSDialer's connection: its reads fail once the
// handshake has read left bytes, until left is set to -1.
type wsHandshakeConn struct {
	net.Conn
	left atomic.Int64
	over atomic.Bool // a read failed for it
}

func (c *wsHandshakeConn) Read(p []byte) (int, error) {
	left := c.left.Load()
	if left < 0 {
		return c.Conn.Read(p)
	}
	if left == 0 {
		c.over.Store(true)
		return 0, errors.New("transport: websocket handshake answer too long")
	}
	n, err := c.Conn.Read(p[:min(int64(len(p)), left)])
	c.left.Add(-int64(n))
	return n, err
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
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
	dialer := websocket.Dialer{
		HandshakeTimeout: 45 * time.Second,
		Subprotocols:     []string{wsSubprotocol},
	}
	ws, resp, err := dialer.DialContext(ctx, d.URL, d.Header)
	if err != nil {
		// The error goes downstream: name the server without the
		// credentials or keys its URL may carry.
		safe := "(unparseable URL)"
		if u, perr := url.Parse(d.URL); perr == nil {
			safe = httpRedactURL(u)
		}
		if resp != nil {
			return nil, fmt.Errorf("transport: websocket dial %s: %w (HTTP %s)", safe, err, resp.Status)
		}
		return nil, fmt.Errorf("transport: websocket dial %s: %w", safe, err)
	}
	return newWSConn(ws, maxMessage(d.MaxMessageBytes), 0), nil
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
}

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
	return newWSConn(ws, maxMessage(opts.MaxMessageBytes), pingInterval), nil
}

var _ Conn = (*wsConn)(nil)

type wsConn struct {
	ws           *websocket.Conn
	readLimit    int64         // the most one message read may have
	pingInterval time.Duration // zero: no keepalive
	closed       chan struct{} // closed by shutdown
	pinging      chan struct{} // closed when keepalive has returned; nil without keepalive

	closeOnce sync.Once
}

func newWSConn(ws *websocket.Conn, readLimit int64, pingInterval time.Duration) *wsConn {
	// gorilla grows the message as its frames arrive, never to the
	// limit up front.
	ws.SetReadLimit(readLimit)
	c := &wsConn{ws: ws, readLimit: readLimit, pingInterval: pingInterval, closed: make(chan struct{})}
	if pingInterval > 0 {
		ws.SetPongHandler(func(string) error {
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
	if c.pingInterval > 0 {
		// Pongs, handled inside ReadMessage, push the deadline on.
		c.ws.SetReadDeadline(time.Now().Add(2 * c.pingInterval))
	}
	_, msg, err := c.ws.ReadMessage()
	if err != nil {
		if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
			return nil, io.EOF
		}
		return nil, c.fail(ctx, "read", err)
	}
	return msg, nil
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
	if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		return c.fail(ctx, "write", err)
	}
	return nil
}

// Close sends a normal close frame and closes the connection.
func (c *wsConn) Close() error {
	c.shutdown(true)
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
	c.closeOnce.Do(func() {
		close(c.closed)
		if closeFrame {
			c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(wsControlWait))
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

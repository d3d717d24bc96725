package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/h1"
)

// Header names of the Streamable HTTP transport.
const (
	httpHeaderSessionID       = "Mcp-Session-Id"
	httpHeaderProtocolVersion = "Mcp-Protocol-Version"
	httpHeaderMethod          = "Mcp-Method"
	httpHeaderName            = "Mcp-Name"
	httpHeaderLastEventID     = "Last-Event-ID"
)

// httpStatelessVersion is the first protocol version without sessions, GET
// streams or resumption, and with Mcp-Method and Mcp-Name on every POST.
// Versions are dates, so later ones compare greater as strings.
const httpStatelessVersion = "2026-07-28"

// httpMetaProtocolVersion is the _meta key in which a request of a stateless
// protocol version names that version.
const httpMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

const (
	httpMaxErrorBody   = 64 << 10 // of an HTTP error response, read for its message
	httpMaxStreamTries = 8        // consecutive failed attempts to (re)open a stream
	httpMaxRetryDelay  = 30 * time.Second
	httpBaseRetryDelay = time.Second // until the server sends a retry field
	httpDeleteTimeout  = 5 * time.Second
)

// A StreamableHTTPDialer connects to an MCP server over the Streamable HTTP
// transport as a client. Dialing sends nothing: the first Write (normally
// initialize) makes the first request. The zero value is not usable; URL
// must be set. A dialer may be used concurrently and its fields must not
// change once Dial has been called.
type StreamableHTTPDialer struct {
	// URL is the server's MCP endpoint, e.g. "https://mcp.example.com/mcp".
	URL string
	// Header is added to every request, e.g. for Authorization. The
	// transport's own headers take precedence over the same names here.
	// Nil adds nothing.
	Header http.Header
	// Client sends the requests. Nil means a client of the Conn's own,
	// with connect and TLS handshake timeouts but no overall or response
	// header timeout, since a response may stream for as long as its
	// request runs; its idle connections are closed with the Conn.
	Client *http.Client
	// MaxMessageBytes bounds a JSON response body, and the data of one
	// event of a response or GET stream: a longer body is not delivered,
	// and the requests it answers get an error; a longer event ends the
	// stream as a broken one. Zero means [DefaultMaxMessageBytes].
	MaxMessageBytes int64
	// ParamHeaders, if set, returns the Mcp-Param-{Name} headers (SEP-2243)
	// of msg, a tools/call sent under a stateless protocol version: the
	// arguments its tool's inputSchema marks with x-mcp-header, which the
	// server checks against the body. Nil sends none.
	ParamHeaders func(msg []byte) map[string]string
}

var _ Dialer = (*StreamableHTTPDialer)(nil)

// Dial returns a Conn for a new session with the server at d.URL. It
// fails only if the URL is not an absolute http or https URL.
//
// On the Conn, Write POSTs the message and returns once the request has
// been sent; responses, and server messages on response streams and on
// the standalone GET stream, come out of Read in the order they arrive.
// A request that fails at the HTTP level (error status, unreachable
// server, broken stream) is answered through Read with a JSON-RPC error of
// code [UpstreamErrorCode]; a notification or response that fails makes
// Write return an error, an [*HTTPStatusError] for an error status. Close
// ends the session with a DELETE, ignoring its outcome.
func (d *StreamableHTTPDialer) Dial(ctx context.Context) (Conn, error) {
	u, err := httpParseURL(d.URL)
	if err != nil {
		return nil, err
	}
	c := &httpStreamableConn{
		endpoint:   u.String(),
		safeURL:    httpRedactURL(u),
		header:     d.Header.Clone(),
		client:     d.Client,
		maxMessage: maxMessage(d.MaxMessageBytes),
		params:     d.ParamHeaders,
		incoming:   make(chan []byte),
	}
	if c.client == nil {
		c.client, c.ownClient = httpStreamingClient(), true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

func httpParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("transport: bad URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("transport: URL %q: want an absolute http or https URL", httpRedactURL(u))
	}
	return u, nil
}

// httpStreamingClient returns an HTTP client suited to long-lived streams:
// bounded connection setup, unbounded responses.
func httpStreamingClient() *http.Client {
	return h1.NoRedirects(&http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
		ForceAttemptHTTP2:     true,
	}})
}

// httpStreamableConn is the client side of one Streamable HTTP session.
type httpStreamableConn struct {
	endpoint   string
	safeURL    string // endpoint as named in errors sent downstream
	header     http.Header
	client     *http.Client
	ownClient  bool
	maxMessage int64 // the most a JSON body or an event's data may have
	params     func(msg []byte) map[string]string
	incoming   chan []byte
	ctx        context.Context // the Conn's lifetime; every request and goroutine is tied to it
	cancel     context.CancelFunc

	mu              sync.Mutex // guards the fields below
	wg              sync.WaitGroup
	closed          bool
	sessionID       string
	protocolVersion string
	// statelessVersion is the protocol version of sessions without
	// initialize: the one named in the _meta of the latest request that
	// named one of them, until an initialize. It is the version of the
	// messages that name none (a 2026-07-28 client's ping, or a
	// notification), which sent without it a server takes for a 2025 era
	// message outside any session and refuses.
	statelessVersion string
	// inflight are the POSTs of requests sent under a stateless version,
	// by id key, until answered: closing one's response stream is how
	// such a request is cancelled (notifications/cancelled is not sent).
	inflight  map[string]*httpInflight
	listening bool // the standalone GET stream has been started
	// initializing is closed when the initialize in flight has its answer
	// (and with it the session id); nil when none is in flight. Messages
	// written meanwhile wait for it: sent without the id, a server
	// refuses them (404).
	initializing chan struct{}
}

var _ Conn = (*httpStreamableConn)(nil)

// An httpInflight is the POST of a request sent under a stateless
// protocol version.
type httpInflight struct {
	cancel context.CancelFunc
}

func (c *httpStreamableConn) Read(ctx context.Context) ([]byte, error) {
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.ctx.Done():
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands msg to Read, waiting for it so that a slow reader slows
// the streams down rather than growing a buffer.
func (c *httpStreamableConn) deliver(msg []byte) bool {
	select {
	case c.incoming <- msg:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// goTracked runs f on a goroutine that Close waits for, unless the Conn is
// already closed.
func (c *httpStreamableConn) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// initHold bounds how long a message written while an initialize is
// unanswered waits for the answer's headers.
const initHold = 2 * time.Second

// An httpPost is one outgoing message and what its response must be checked
// against.
type httpPost struct {
	batch    bool
	method   string            // of a single message
	ids      []json.RawMessage // of the requests in it
	initID   string            // id key of an initialize request, or ""
	stateful bool              // sent under a protocol version with sessions
	// initialized, for an initialize, ends the wait of the messages
	// written after it (see httpStreamableConn.initializing); idempotent.
	initialized func()
}

func (c *httpStreamableConn) Write(ctx context.Context, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	envs, batch, err := httpParseMessage(msg)
	if err != nil {
		return fmt.Errorf("transport: message for %s is not JSON-RPC: %w", c.safeURL, err)
	}
	p := &httpPost{batch: batch, ids: httpRequestIDs(envs)}
	if !batch {
		p.method = envs[0].Method
		if p.method == "initialize" && envs[0].isRequest() {
			p.initID = httpIDKey(envs[0].ID)
		}
	}

	req, err := http.NewRequest(http.MethodPost, c.endpoint, bytes.NewReader(msg))
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	httpCopyHeader(req.Header, c.header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	noSession := false
	if p.initID == "" && c.initializing != nil {
		// An initialize is in flight: its answer's headers bring the
		// session id this message must carry. Waited for a while only:
		// a server that does not answer must not hold the client's other
		// messages (and the reader of its stream, and its going away)
		// for ever; past initHold they go as they would have.
		wait := c.initializing
		c.mu.Unlock()
		timer := time.NewTimer(initHold)
		select {
		case <-wait:
		case <-timer.C:
			// Still unanswered: the message goes without a session id
			// rather than under the session an initialize replaces.
			noSession = true
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-c.ctx.Done():
			timer.Stop()
			return ErrClosed
		}
		timer.Stop()
		c.mu.Lock()
	}
	if p.initID != "" {
		done := make(chan struct{})
		c.initializing = done
		var once sync.Once
		p.initialized = func() {
			once.Do(func() {
				c.mu.Lock()
				if c.initializing == done {
					c.initializing = nil
				}
				c.mu.Unlock()
				close(done)
			})
		}
	}
	version := c.protocolVersion
	if p.initID != "" {
		c.statelessVersion = "" // the client falls back to a session
	} else if version == "" {
		version = c.statelessVersion
	}
	if !batch {
		if v := httpRequestedVersion(envs[0].Params); v != "" {
			version = v
			if v >= httpStatelessVersion && c.protocolVersion == "" {
				c.statelessVersion = v
			}
		}
	}
	p.stateful = version < httpStatelessVersion
	if !p.stateful && !batch && p.method == "notifications/cancelled" {
		// Over Streamable HTTP a stateless request is cancelled by
		// closing its response stream, and only so: the server expects
		// no notification, and mcp-go's refuses one (400).
		id := httpCancelledID(envs[0].Params)
		if f := c.inflight[id]; f != nil {
			f.cancel()
		}
		c.mu.Unlock()
		return nil
	}
	if version != "" {
		req.Header.Set(httpHeaderProtocolVersion, version)
	}
	if p.stateful && c.sessionID != "" && p.initID == "" && !(noSession && c.initializing != nil) {
		req.Header.Set(httpHeaderSessionID, c.sessionID)
	}
	c.mu.Unlock()
	if !p.stateful && !batch && p.method != "" {
		req.Header.Set(httpHeaderMethod, p.method)
		if name, ok := httpNameHeader(p.method, envs[0].Params); ok {
			req.Header.Set(httpHeaderName, name)
		}
		if p.method == "tools/call" && c.params != nil {
			for k, v := range c.params(msg) {
				req.Header.Set(k, v)
			}
		}
	}

	// A request's response may take as long as the request runs, so Write
	// waits only until the request is on the wire; everything else is
	// quick to answer (202), and its status is Write's result.
	ack := make(chan error, 1)
	var once sync.Once
	signal := func(err error) { once.Do(func() { ack <- err }) }
	reqCtx, cancelReq := context.WithCancel(c.ctx)
	if len(p.ids) > 0 {
		reqCtx = httptrace.WithClientTrace(reqCtx, &httptrace.ClientTrace{
			WroteRequest: func(info httptrace.WroteRequestInfo) {
				if info.Err == nil {
					signal(nil)
				}
			},
		})
	}
	req = req.WithContext(reqCtx)
	if !p.stateful && !batch && len(p.ids) == 1 {
		flight := &httpInflight{cancel: cancelReq}
		c.mu.Lock()
		if c.inflight == nil {
			c.inflight = map[string]*httpInflight{}
		}
		key := httpIDKey(p.ids[0])
		c.inflight[key] = flight
		c.mu.Unlock()
		// Forgotten when its POST is done (below), not when Write
		// returns: the answer comes later.
		inner := cancelReq
		cancelReq = func() {
			inner()
			c.mu.Lock()
			if c.inflight[key] == flight {
				delete(c.inflight, key)
			}
			c.mu.Unlock()
		}
	}
	if !c.goTracked(func() { defer cancelReq(); c.roundTrip(req, p, signal) }) {
		cancelReq()
		if p.initialized != nil {
			p.initialized()
		}
		return ErrClosed
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		select {
		case err := <-ack:
			return err
		default:
		}
		// Abandoned before it was sent: cancelling the request makes
		// roundTrip return without answering it, as Write reports it.
		cancelReq()
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

// httpRequestedVersion returns the protocol version a request of a stateless
// protocol version names in its _meta, or "".
func httpRequestedVersion(params json.RawMessage) string {
	if len(params) == 0 {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(p.Meta[httpMetaProtocolVersion], &v) != nil {
		return ""
	}
	return v
}

// httpCancelledID returns the id key of the request a
// notifications/cancelled names, or "".
func httpCancelledID(params json.RawMessage) string {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return ""
	}
	return httpIDKey(p.RequestID)
}

// httpNameHeader returns the Mcp-Name header value for a method that has one:
// params.name of tools/call and prompts/get, params.uri of resources/read.
func httpNameHeader(method string, params json.RawMessage) (string, bool) {
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	var v *string
	switch method {
	case "tools/call", "prompts/get":
		v = p.Name
	case "resources/read":
		v = p.URI
	}
	if v == nil {
		return "", false
	}
	return httpEncodeHeaderValue(*v), true
}

// httpEncodeHeaderValue returns s as it may travel in a header: as it is when
// it is printable ASCII without leading or trailing space, otherwise (or
// when it would read as an encoded value) wrapped as =?base64?...?=.
func httpEncodeHeaderValue(s string) string {
	plain := s == strings.TrimSpace(s) &&
		!(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// roundTrip sends one POST and delivers what comes back. signal reports
// when Write may return and with what.
func (c *httpStreamableConn) roundTrip(req *http.Request, p *httpPost, signal func(error)) {
	if p.initialized != nil {
		defer p.initialized() // failed, or answered without a stream
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			// Closed, or abandoned by Write, which has returned already.
			signal(ErrClosed)
			return
		}
		err = httpCause(err)
		if len(p.ids) > 0 {
			signal(nil)
			c.failRequests(p.ids, p.batch, fmt.Sprintf("upstream %s unreachable: %v", c.safeURL, err), nil)
			return
		}
		signal(fmt.Errorf("transport: POST %s: %w", c.safeURL, err))
		return
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpMaxErrorBody))
		serr, data := httpStatusFailure(c.safeURL, resp, body)
		if len(p.ids) == 0 {
			signal(serr)
			return
		}
		signal(nil)
		msg := fmt.Sprintf("upstream %s returned HTTP %d %s", c.safeURL, resp.StatusCode, http.StatusText(resp.StatusCode))
		if serr.Message != "" {
			msg += ": " + serr.Message
		}
		c.failRequests(p.ids, p.batch, msg, data)
		return
	}

	if sid := resp.Header.Get(httpHeaderSessionID); sid != "" && p.stateful {
		c.mu.Lock()
		if p.initID != "" || c.sessionID == "" {
			c.sessionID = sid
		}
		c.mu.Unlock()
	}
	if p.initialized != nil {
		// The session id is known: what waits may go (an answer to a
		// ping the server sends before answering initialize, too).
		p.initialized()
	}
	signal(nil)
	if p.method == "notifications/initialized" {
		c.startListening()
	}

	st := httpNewStreamState(p)
	st.withdrawn = req.Context()
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return
	case mediaType == "text/event-stream":
		err := c.consume(resp.Body, st)
		c.finishStream(st, err)
	case mediaType == "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxMessage+1))
		switch {
		case err != nil:
			c.failRequests(st.pendingIDs(), p.batch, fmt.Sprintf("upstream %s: reading response: %v", c.safeURL, httpCause(err)), nil)
		case int64(len(body)) > c.maxMessage:
			c.failRequests(st.pendingIDs(), p.batch, fmt.Sprintf("upstream %s: response larger than %s", c.safeURL, sizeString(c.maxMessage)), nil)
		case len(bytes.TrimSpace(body)) > 0:
			// A JSON body usually ends in a newline; a message passed on
			// to a stdio client must not contain one.
			body = bytes.TrimSpace(body)
			c.observe(body, st)
			if !c.deliver(body) {
				return
			}
			c.failRequests(st.pendingIDs(), p.batch, fmt.Sprintf("upstream %s: response did not answer the request", c.safeURL), nil)
		default:
			c.failRequests(st.pendingIDs(), p.batch, fmt.Sprintf("upstream %s: empty response", c.safeURL), nil)
		}
	default:
		c.failRequests(st.pendingIDs(), p.batch, fmt.Sprintf("upstream %s: unexpected response type %q", c.safeURL, mediaType), nil)
	}
}

// failRequests answers the requests with ids with a made-up error.
func (c *httpStreamableConn) failRequests(ids []json.RawMessage, batch bool, message string, data any) {
	if len(ids) == 0 || c.ctx.Err() != nil {
		return
	}
	c.deliver(httpErrorResponses(ids, batch, message, data))
}

// httpStreamState follows an SSE stream, and the streams that resume it,
// through reconnections.
type httpStreamState struct {
	pending     map[string]json.RawMessage // requests without a response yet, by id key; nil without requests
	batch       bool                       // the requests went in a batch
	resumable   bool                       // the protocol version lets a broken stream be resumed
	initID      string
	initialized func() // httpPost.initialized
	lastEventID string
	retry       time.Duration // from the server's retry field, or 0
	delivered   bool          // by the latest connection
	// withdrawn is the context of the POST: done when it was abandoned.
	// Nil for a GET stream.
	withdrawn context.Context
}

func httpNewStreamState(p *httpPost) *httpStreamState {
	st := &httpStreamState{batch: p.batch, resumable: p.stateful, initID: p.initID, initialized: p.initialized}
	if len(p.ids) > 0 {
		st.pending = map[string]json.RawMessage{}
	}
	for _, id := range p.ids {
		st.pending[httpIDKey(id)] = id
	}
	return st
}

func (st *httpStreamState) pendingIDs() []json.RawMessage {
	if st.withdrawn != nil && st.withdrawn.Err() != nil {
		// Its POST was abandoned (the request cancelled, the Conn
		// closed): nobody waits for an answer, made up or not.
		return nil
	}
	var ids []json.RawMessage
	for _, id := range st.pending {
		ids = append(ids, id)
	}
	return ids
}

// observe notes the responses in msg: they are no longer pending, and
// the result of initialize tells the protocol version of the session.
func (c *httpStreamableConn) observe(msg []byte, st *httpStreamState) {
	envs, _, err := httpParseMessage(msg)
	if err != nil {
		return
	}
	for _, e := range envs {
		if !e.isResponse() {
			continue
		}
		key := httpIDKey(e.ID)
		delete(st.pending, key)
		if st.initID == "" || key != st.initID || len(e.Result) == 0 {
			continue
		}
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(e.Result, &r) == nil && r.ProtocolVersion != "" {
			c.mu.Lock()
			c.protocolVersion = r.ProtocolVersion
			c.mu.Unlock()
		}
		if st.initialized != nil {
			st.initialized() // the session id and version are known
		}
	}
}

// consume delivers the messages of an SSE stream until it ends, the Conn
// closes, or (on a response stream) every request has been answered.
func (c *httpStreamableConn) consume(body io.Reader, st *httpStreamState) error {
	r := NewSSEReader(body)
	r.MaxDataBytes = c.maxMessage
	st.delivered = false
	for {
		ev, err := r.Next()
		if id := r.LastEventID(); id != "" {
			st.lastEventID = id
		}
		if err != nil {
			return err
		}
		if ms, err := strconv.Atoi(ev.Retry); err == nil {
			st.retry = time.Duration(ms) * time.Millisecond
		}
		if (ev.Event != "" && ev.Event != "message") || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		c.observe(ev.Data, st)
		if !c.deliver(ev.Data) {
			return ErrClosed
		}
		st.delivered = true
		if st.pending != nil && len(st.pending) == 0 {
			return nil
		}
	}
}

// finishStream makes sure every request of a response stream that ended
// with err gets a response: by resuming the stream with a GET carrying
// Last-Event-ID when the server numbered its events, or else by a made-up
// error.
func (c *httpStreamableConn) finishStream(st *httpStreamState, err error) {
	failures := 0
	for len(st.pending) > 0 && st.resumable && st.lastEventID != "" && c.ctx.Err() == nil {
		if st.delivered {
			failures = 0
		}
		failures++
		if failures > httpMaxStreamTries || !c.wait(httpRetryDelay(st.retry, failures)) {
			break
		}
		resp, gerr := c.get(st.lastEventID)
		if gerr != nil {
			err = gerr
			st.delivered = false
			continue
		}
		if resp.StatusCode != http.StatusOK || !httpIsEventStream(resp) {
			resp.Body.Close()
			err = fmt.Errorf("resuming: HTTP %d", resp.StatusCode)
			break
		}
		err = c.consume(resp.Body, st)
		resp.Body.Close()
	}
	if len(st.pending) > 0 && c.ctx.Err() == nil {
		msg := fmt.Sprintf("upstream %s: response stream ended before the response", c.safeURL)
		if err != nil && err != io.EOF {
			msg += ": " + httpCause(err).Error()
		}
		c.failRequests(st.pendingIDs(), st.batch, msg, nil)
	}
}

func httpIsEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// httpRetryDelay is the wait before attempt number failures (from 1) to
// reopen a stream: the server's retry time, or a second, doubling with
// each consecutive failure up to 30s.
func httpRetryDelay(retry time.Duration, failures int) time.Duration {
	d := httpBaseRetryDelay
	if retry > 0 {
		d = retry
	}
	for i := 1; i < failures && d < httpMaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, httpMaxRetryDelay)
}

// wait waits for d, or reports false if the Conn closes first.
func (c *httpStreamableConn) wait(d time.Duration) bool {
	if d <= 0 {
		return c.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// get opens an SSE stream with a GET, resuming after lastEventID if set.
func (c *httpStreamableConn) get(lastEventID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, err
	}
	httpCopyHeader(req.Header, c.header)
	req.Header.Set("Accept", "text/event-stream")
	c.mu.Lock()
	if c.sessionID != "" {
		req.Header.Set(httpHeaderSessionID, c.sessionID)
	}
	if c.protocolVersion != "" {
		req.Header.Set(httpHeaderProtocolVersion, c.protocolVersion)
	}
	c.mu.Unlock()
	if lastEventID != "" {
		req.Header.Set(httpHeaderLastEventID, lastEventID)
	}
	return c.client.Do(req)
}

// startListening opens the standalone GET stream once the session is
// initialized, if the session has an id and its protocol version has
// such streams.
func (c *httpStreamableConn) startListening() {
	c.mu.Lock()
	start := !c.listening && c.sessionID != "" && c.protocolVersion < httpStatelessVersion
	c.listening = true
	c.mu.Unlock()
	if start {
		c.goTracked(c.listen)
	}
}

// listen keeps the standalone GET stream open, reconnecting with
// Last-Event-ID when it drops, until the Conn closes, the server says it
// has no such stream (405) or no such session (404), or it fails
// httpMaxStreamTries times in a row.
func (c *httpStreamableConn) listen() {
	st := &httpStreamState{}
	failures := 0
	for {
		if failures > 0 && !c.wait(httpRetryDelay(st.retry, failures)) {
			return
		}
		resp, err := c.get(st.lastEventID)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			failures++
			if failures > httpMaxStreamTries {
				return
			}
			continue
		}
		switch {
		case resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotFound:
			resp.Body.Close()
			return
		case resp.StatusCode != http.StatusOK || !httpIsEventStream(resp):
			resp.Body.Close()
			failures++
			if failures > httpMaxStreamTries {
				return
			}
			continue
		}
		c.consume(resp.Body, st)
		resp.Body.Close()
		if c.ctx.Err() != nil {
			return
		}
		if st.delivered {
			failures = 0
		}
		failures++
		if failures > httpMaxStreamTries {
			return
		}
	}
}

// Close ends the session: it stops every stream and request, waits for
// their goroutines, and then sends DELETE with the session id, if there
// is one, ignoring the outcome.
func (c *httpStreamableConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()

	c.mu.Lock()
	sid, version := c.sessionID, c.protocolVersion
	c.mu.Unlock()
	if sid != "" && version < httpStatelessVersion {
		ctx, cancel := context.WithTimeout(context.Background(), httpDeleteTimeout)
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil); err == nil {
			httpCopyHeader(req.Header, c.header)
			req.Header.Set(httpHeaderSessionID, sid)
			if version != "" {
				req.Header.Set(httpHeaderProtocolVersion, version)
			}
			if resp, err := c.client.Do(req); err == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, httpMaxErrorBody))
				resp.Body.Close()
			}
		}
		cancel()
	}
	if c.ownClient {
		c.client.CloseIdleConnections()
	}
	return nil
}

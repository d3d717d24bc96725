package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// Virtual servers over the connection transports: /sse[/{name}] (the
// 2024-11-05 HTTP+SSE transport) and /ws[/{name}]. A connection is one
// session of the virtual server: each message it carries goes to the
// virtual server as the Streamable HTTP request it would be (same
// principal, client address and headers as the request that opened the
// connection), and the answers — JSON or each event of an SSE answer —
// and the session's GET stream (list changes, requests to the client) are
// written back on the connection. Requests are served concurrently, in
// order until initialize has given a session. The session ends with the
// connection.

// sseServer is the virtual server's HTTP+SSE endpoint.
func (a *aggregator) sseServer() *transport.SSEServer {
	base := "/sse"
	if a.vs.Name != "" {
		base += "/" + a.vs.Name
	}
	return &transport.SSEServer{
		MessagePath: func(id string) string { return base + "/message?sessionId=" + url.QueryEscape(id) },
		OnSession: func(ctx context.Context, _ string, c transport.Conn) {
			opened, _ := ctx.Value(openedKey{}).(*http.Request)
			a.serveConn(ctx, c, opened)
		},
		MaxMessageBytes: a.g.opts.maxBody(),
		// A POST must come from whoever opened the stream.
		Owner: func(r *http.Request) string {
			c, err := a.g.ident.identify(r, nil)
			if err != nil {
				return refusedOwner
			}
			return owner(r) + "\x00" + c.header
		},
	}
}

// serveVirtualConn admits a connection to virtual server a and serves it.
func (g *Gateway) serveVirtualConn(w http.ResponseWriter, r *http.Request, a *aggregator, kind Transport) {
	if !g.identified(w, r) {
		return
	}
	l, ok := g.admitConnLease(w, r, kind)
	if !ok {
		return
	}
	defer l.release()
	if kind == TransportSSE {
		a.sse.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), openedKey{}, r)))
		return
	}
	c, err := transport.AcceptWS(w, r, g.wsAcceptOptions(r))
	if err != nil {
		return // AcceptWS has answered
	}
	defer c.Close()
	a.serveConn(r.Context(), c, r)
}

func (a *aggregator) serveConn(ctx context.Context, c transport.Conn, opened *http.Request) {
	var wmu sync.Mutex
	p := intercept.PrincipalFrom(ctx)
	cut := false // guarded by wmu
	// cutOff ends the connection of a client whose credential no longer
	// holds: the error, and it closes (1008 on a WebSocket; its reader
	// returns). Callers hold wmu.
	cutOff := func(err error) {
		if cut {
			return
		}
		cut = true
		wctx, cancel := context.WithTimeout(ctx, lapsedWriteWait)
		_ = c.Write(wctx, intercept.ErrorResponse(nil, err))
		cancel()
		closeLapsed(c)
	}
	write := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		if cut {
			return
		}
		if err := p.Gone(); err != nil {
			cutOff(err) // nothing more for it
			return
		}
		_ = c.Write(ctx, b)
	}
	// A quiet connection is cut off too, as soon as the credential
	// lapses (watchCredential).
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() {
		watchCredential(watchCtx, func(err error) {
			wmu.Lock()
			defer wmu.Unlock()
			cutOff(err)
		})
	})
	defer func() { stopWatch(); watching.Wait() }()
	var sid atomic.Value       // string, once initialize has answered
	var serving atomic.Int64   // messages being served on goroutines
	key := a.g.bodyKey(opened) // whose room they take in the body budget
	var wg sync.WaitGroup
	// The messages being served when the connection ends have no one to
	// answer: they end with it (a WebSocket's request context does not),
	// so that its calls held for approval are still held, and withdrawn,
	// when its session ends below (aggregator.end).
	msgCtx, stopMsgs := context.WithCancel(ctx)
	getCtx, stopGet := context.WithCancel(ctx)
	defer func() {
		stopMsgs()
		stopGet()
		wg.Wait()
		if id, _ := sid.Load().(string); id != "" {
			// The connection is gone: so is its session, and the
			// sessions it opened upstream.
			a.ServeHTTP(&discard{h: http.Header{}}, a.connRequest(context.WithoutCancel(ctx), opened, http.MethodDelete, id, nil))
		}
	}()
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := credentialGone(ctx); err != nil {
			wmu.Lock()
			cutOff(err)
			wmu.Unlock()
			return
		}
		id, _ := sid.Load().(string)
		req := a.connRequest(msgCtx, opened, http.MethodPost, id, msg)
		// A 2026-07-28 request stands alone, and is served as those of a
		// session are: a subscription lasts until the client goes.
		if id == "" && req.Header.Get(hdrVersion) == "" {
			w := &connWriter{h: http.Header{}, write: write}
			a.ServeHTTP(w, req)
			w.finish()
			if s := w.h.Get("Mcp-Session-Id"); s != "" {
				sid.Store(s)
				wg.Go(func() {
					a.ServeHTTP(&connWriter{h: http.Header{}, write: write}, a.connRequest(getCtx, opened, http.MethodGet, s, nil))
				})
			}
			continue
		}
		// Served on a goroutine of its own while the next is read: what
		// one connection has being served is bounded like what a client
		// POSTs, each message keeping its room in the request-body
		// budget (the calls a virtual server makes through its
		// upstreams' routes take none of their own) until its answer,
		// and by count like a route's connection.
		n := int64(len(msg))
		releaseMessage(c) // held below instead
		if err := a.admitConnMessage(ctx, &serving, key, n); err != nil {
			if ctx.Err() != nil {
				return
			}
			if m, derr := intercept.DecodeMessage(msg); derr == nil && m.Kind == intercept.KindRequest {
				write(intercept.ErrorResponse(m.ID, err))
			}
			continue
		}
		wg.Go(func() {
			defer func() { serving.Add(-1); a.g.bodies.release(key, n) }()
			w := &connWriter{h: http.Header{}, write: write}
			a.ServeHTTP(w, req)
			w.finish()
		})
	}
}

// admitConnMessage takes room for a message of n bytes a virtual
// connection is about to serve, beside the serving it serves already:
// its place among at most maxConnPending, and n bytes of the request-body
// budget, waited for as a POST waits. The caller gives both back once the
// message is answered.
func (a *aggregator) admitConnMessage(ctx context.Context, serving *atomic.Int64, key string, n int64) error {
	if serving.Add(1) > maxConnPending {
		serving.Add(-1)
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: not served: this connection already has %d messages being served, the most it may; send more as they are answered", maxConnPending)}
	}
	if err := a.g.bodies.acquireWithin(ctx, key, n, bodyWait); err != nil {
		serving.Add(-1)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return a.g.bodies.full().wire()
	}
	return nil
}

// connRequest is a request to the virtual server on behalf of the
// connection opened by opened (its principal is in ctx).
func (a *aggregator) connRequest(ctx context.Context, opened *http.Request, method, session string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, a.path(), bytes.NewReader(body))
	if opened != nil {
		req.Host = opened.Host
		req.RemoteAddr = opened.RemoteAddr
		for _, h := range []string{a.g.opts.AgentHeader, "Authorization", "Traceparent", "Tracestate"} {
			if h != "" && opened.Header.Get(h) != "" {
				req.Header.Set(h, opened.Header.Get(h))
			}
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	modernConnHeaders(req.Header, body)
	return req
}

// modernConnHeaders sets in h the headers a 2026-07-28 request requires
// (checkModernHeaders), as body, a message a connection carried, says
// them, if body is such a request: a connection's messages have none of
// their own, and every 2026-07-28 one was refused as a header mismatch.
func modernConnHeaders(h http.Header, body []byte) {
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || req.Method == "" {
		return
	}
	v := intercept.StringMember(intercept.Member(req.Params, "_meta"), "io.modelcontextprotocol/protocolVersion")
	if !isModern(v) {
		return
	}
	h.Set(hdrVersion, v)
	h.Set(hdrMethod, req.Method)
	switch {
	case intercept.TaskMethod(req.Method) && req.Method != "tasks/result":
		h.Set(hdrName, encodeHeaderValue(intercept.StringMember(req.Params, "taskId")))
	case req.Method == "resources/read":
		h.Set(hdrName, encodeHeaderValue(intercept.StringMember(req.Params, "uri")))
	case namedMethod(req.Method):
		h.Set(hdrName, encodeHeaderValue(intercept.StringMember(req.Params, "name")))
	}
}

// connWriter writes what the virtual server answers onto a connection: a
// JSON body as one message, an SSE answer event by event.
type connWriter struct {
	h     http.Header
	body  bytes.Buffer
	sink  *sseSink
	write func([]byte)
}

func (w *connWriter) Header() http.Header { return w.h }
func (w *connWriter) WriteHeader(int)     {}
func (w *connWriter) Flush()              {}
func (w *connWriter) Write(p []byte) (int, error) {
	if ct := w.h.Get("Content-Type"); len(ct) >= 17 && ct[:17] == "text/event-stream" {
		if w.sink == nil {
			w.sink = &sseSink{h: http.Header{}, on: w.write}
		}
		return w.sink.Write(p)
	}
	return w.body.Write(p)
}

// finish writes a JSON answer, if there was one (a notification's 202 has
// none).
func (w *connWriter) finish() {
	if b := bytes.TrimSpace(w.body.Bytes()); len(b) > 0 {
		w.write(b)
	}
}

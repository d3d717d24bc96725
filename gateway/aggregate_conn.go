package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

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
			c, _ := a.g.ident.identify(r, nil)
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
	c, err := transport.AcceptWS(w, r, g.wsAcceptOptions())
	if err != nil {
		return // AcceptWS has answered
	}
	defer c.Close()
	a.serveConn(r.Context(), c, r)
}

func (a *aggregator) serveConn(ctx context.Context, c transport.Conn, opened *http.Request) {
	var wmu sync.Mutex
	write := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = c.Write(ctx, b)
	}
	var sid atomic.Value // string, once initialize has answered
	var wg sync.WaitGroup
	getCtx, stopGet := context.WithCancel(ctx)
	defer func() {
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
			write(intercept.ErrorResponse(nil, err))
			return
		}
		id, _ := sid.Load().(string)
		req := a.connRequest(ctx, opened, http.MethodPost, id, msg)
		if id == "" {
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
		wg.Go(func() {
			w := &connWriter{h: http.Header{}, write: write}
			a.ServeHTTP(w, req)
			w.finish()
		})
	}
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
	return req
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

package transport

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	sseDefaultMaxMessage = 4 << 20
	sseDefaultKeepAlive  = 15 * time.Second
)

var (
	errSSESessionEnded = errors.New("transport: SSE session ended")
	errSSEServerClosed = errors.New("transport: SSE server closed")
	errSSEClientGone   = fmt.Errorf("transport: SSE client disconnected: %w", io.EOF)
)

// An SSEServer serves the server side of the legacy HTTP+SSE transport of
// protocol version 2024-11-05. Each GET opens an event stream and a
// session: the first event, "endpoint", tells the client where to POST
// its messages (the message path with ?sessionId=ID), each POST is read
// from the session's Conn, and each Write on that Conn is sent as a
// "message" event.
//
// Use one value per listener, not copied after first use. Its methods may
// be called concurrently.
//
//	s := &transport.SSEServer{OnSession: relay}
//	mux.Handle("/sse", s) // GET opens a stream; POSTs are told to come here too
type SSEServer struct {
	// MessagePath returns the URL path that the endpoint event of a new
	// session announces; "?sessionId=" and the id are appended. Nil means
	// the path of the GET, as ServeHTTP handles POSTs too.
	MessagePath func(sessionID string) string
	// OnSession is called on a goroutine of its own for each new stream,
	// with the session's id and Conn. ctx ends when the client disconnects
	// or Close is called, and Read on c then fails. The session and its
	// stream end when OnSession returns, and the GET handler waits for it
	// to return, so it must return promptly once ctx is done. Required.
	OnSession func(ctx context.Context, id string, c Conn)
	// MaxMessageBytes limits the body of one POST; a larger one gets 413.
	// Zero means 4 MiB.
	MaxMessageBytes int64
	// KeepAlive is the interval between comment lines sent so that idle
	// streams are not cut by proxies. Zero means 15s; negative, none.
	KeepAlive time.Duration
	// Owner, if set, names who a request comes from (an agent header's
	// value, say). A POST whose owner differs from that of the GET that
	// opened its session is answered as for an unknown session, so a
	// session id seen by someone else is of no use to them. Nil: any
	// holder of the session id may POST.
	Owner func(r *http.Request) string
	// OnOwnerMismatch, if set, is called when a POST is refused because
	// its owner differs from its session's (see Owner), with the session
	// id and the owner of the session. Nil: nothing is called.
	OnOwnerMismatch func(r *http.Request, session, owner string)

	mu       sync.Mutex // guards the fields below
	sessions map[string]*sseSession
	closed   bool
}

// ServeHTTP opens a session on GET and hands POST to HandleMessage.
func (s *SSEServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.serveStream(w, r)
	case http.MethodPost:
		s.HandleMessage(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *SSEServer) serveStream(w http.ResponseWriter, r *http.Request) {
	sess := &sseSession{
		id:  rand.Text(),
		in:  make(chan []byte),
		out: make(chan sseWrite),
	}
	if s.Owner != nil {
		sess.owner = s.Owner(r)
	}
	sess.ctx, sess.cancel = context.WithCancelCause(r.Context())
	defer sess.cancel(errSSESessionEnded)
	if !s.add(sess) {
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	defer s.remove(sess.id)

	path := r.URL.Path
	if s.MessagePath != nil {
		path = s.MessagePath(sess.id)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	endpoint := path + sep + "sessionId=" + url.QueryEscape(sess.id)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if WriteSSEEvent(w, SSEEvent{Event: "endpoint", Data: []byte(endpoint)}) != nil || rc.Flush() != nil {
		return
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer sess.cancel(errSSESessionEnded)
		s.OnSession(sess.ctx, sess.id, sess)
	}()
	defer wg.Wait()

	var tick <-chan time.Time
	if ka := s.KeepAlive; ka >= 0 {
		if ka == 0 {
			ka = sseDefaultKeepAlive
		}
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case wr := <-sess.out:
			err := WriteSSEEvent(w, SSEEvent{Event: "message", Data: wr.msg}) // compacted by Write
			if err == nil {
				err = rc.Flush()
			}
			wr.errc <- err
			if err != nil {
				sess.cancel(errSSEClientGone)
				return
			}
		case <-tick:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				sess.cancel(errSSEClientGone)
				return
			}
		case <-sess.ctx.Done():
			return
		}
	}
}

func (s *SSEServer) add(sess *sseSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.sessions == nil {
		s.sessions = map[string]*sseSession{}
	}
	s.sessions[sess.id] = sess
	return true
}

func (s *SSEServer) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

func (s *SSEServer) lookup(id string) *sseSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// HandleMessage handles a POST of one message (or batch) to the session
// named by the sessionId query parameter: it answers 202 Accepted once the
// session's Conn has read the body, 404 for an unknown or ended session
// (or another owner's),
// 413 for a body over MaxMessageBytes, 415 for a content type other than
// application/json and 400 for a body that is not JSON, each error with a
// JSON-RPC error body.
func (s *SSEServer) HandleMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		sseWriteRPCError(w, http.StatusMethodNotAllowed, -32600, "method not allowed: use POST")
		return
	}
	sess := s.lookup(r.URL.Query().Get("sessionId"))
	if sess != nil && s.Owner != nil && s.Owner(r) != sess.owner {
		if s.OnOwnerMismatch != nil {
			s.OnOwnerMismatch(r, sess.id, sess.owner)
		}
		sess = nil
	}
	if sess == nil {
		sseWriteRPCError(w, http.StatusNotFound, -32600, "unknown session")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		sseWriteRPCError(w, http.StatusUnsupportedMediaType, -32600, "content type must be application/json")
		return
	}
	limit := s.MaxMessageBytes
	if limit <= 0 {
		limit = sseDefaultMaxMessage
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			sseWriteRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("message larger than %d bytes", limit))
			return
		}
		sseWriteRPCError(w, http.StatusBadRequest, -32700, "reading message: "+err.Error())
		return
	}
	if !json.Valid(body) {
		sseWriteRPCError(w, http.StatusBadRequest, -32700, "message is not valid JSON")
		return
	}
	select {
	case sess.in <- body:
		w.WriteHeader(http.StatusAccepted)
	case <-sess.ctx.Done():
		sseWriteRPCError(w, http.StatusNotFound, -32600, "session ended")
	case <-r.Context().Done():
	}
}

// sseWriteRPCError answers with a JSON-RPC error response without an id.
func sseWriteRPCError(w http.ResponseWriter, status, code int, message string) {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": message},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// Close ends every open session, as if its client had disconnected, and
// makes later GETs fail with 503. It does not wait for the sessions'
// handlers to return.
func (s *SSEServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sess := range s.sessions {
		sess.cancel(errSSEServerClosed)
	}
	return nil
}

// sseSession is the Conn of one server-side session.
type sseSession struct {
	id     string
	owner  string        // who opened it (SSEServer.Owner)
	in     chan []byte   // bodies of POSTs
	out    chan sseWrite // to the GET handler, which owns the ResponseWriter
	ctx    context.Context
	cancel context.CancelCauseFunc
}

type sseWrite struct {
	msg  []byte
	errc chan error
}

var _ Conn = (*sseSession)(nil)

// err says why the session is over.
func (c *sseSession) err() error {
	switch cause := context.Cause(c.ctx); cause {
	case ErrClosed, errSSESessionEnded, errSSEServerClosed, errSSEClientGone:
		return cause
	default:
		return errSSEClientGone // the GET's context ended
	}
}

// Read returns the next POSTed message.
func (c *sseSession) Read(ctx context.Context) ([]byte, error) {
	if c.ctx.Err() != nil {
		return nil, c.err()
	}
	select {
	case msg := <-c.in:
		return msg, nil
	case <-c.ctx.Done():
		return nil, c.err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write sends msg as a message event, in the form [Compact] gives it, and
// waits until it is flushed. A msg that is not JSON is refused with a
// *[MessageError].
func (c *sseSession) Write(ctx context.Context, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	select {
	case c.out <- sseWrite{msg: msg, errc: errc}:
		return <-errc
	case <-c.ctx.Done():
		return c.err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the session and its stream.
func (c *sseSession) Close() error {
	c.cancel(ErrClosed)
	return nil
}

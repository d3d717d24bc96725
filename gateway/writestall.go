package gateway

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// A client that keeps its socket open without reading blocks the
// handler writing it an answer: for good, when the answer streams on
// (an upstream's event stream, a held call's question and outcome).
// Such a request is never done, so its session never goes idle and
// keeps its place in the session limits, its upstream session and the
// upstream's stream. Each write of an answer, and each flush, gets
// WriteStallTimeout to make progress (a write deadline on the
// connection, http.ResponseController), cleared once it returns: a
// stuck write fails, the handler sees the error as for a client gone
// and returns. A stream with nothing to write waits without a deadline,
// as an idle GET stream may.

// stallGuard gives every response written through next a bound on each
// write (stallWriter).
func (g *Gateway) stallGuard(next http.Handler) http.Handler {
	stall := g.opts.writeStallTimeout()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}, r)
	})
}

// stallWriter is a ResponseWriter whose writes and flushes fail once
// they have made no progress for stall. It is used by one goroutine at
// a time, as a ResponseWriter is.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController // of ResponseWriter
	stall time.Duration
}

// bounded runs write with the connection's write deadline stall away,
// and clears it after: the server writes the response's end and later
// responses on the same connection without one. A ResponseWriter that
// cannot set deadlines (a test's recorder) is written without.
func (s *stallWriter) bounded(write func() error) error {
	if s.rc.SetWriteDeadline(time.Now().Add(s.stall)) != nil {
		return write()
	}
	err := write()
	_ = s.rc.SetWriteDeadline(time.Time{})
	return err
}

func (s *stallWriter) Write(b []byte) (n int, err error) {
	err = s.bounded(func() error {
		n, err = s.ResponseWriter.Write(b)
		return err
	})
	return n, err
}

// WriteHeader writes nothing to the connection (the header goes with
// the first write or flush); it needs no bound.

// FlushError flushes what is buffered to the client, bounded; an
// http.ResponseController's Flush calls it.
func (s *stallWriter) FlushError() error { return s.bounded(s.rc.Flush) }

// Flush is FlushError for callers that take an http.Flusher.
func (s *stallWriter) Flush() { _ = s.FlushError() }

// Hijack hands the connection over (a WebSocket upgrade takes an
// http.Hijacker), without a deadline: its new owner sets its own.
func (s *stallWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return s.rc.Hijack() }

// Unwrap lets an http.ResponseController reach the ResponseWriter
// beneath for what stallWriter does not do itself (deadlines, full
// duplex).
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var (
	_ http.Flusher  = (*stallWriter)(nil)
	_ http.Hijacker = (*stallWriter)(nil)
)

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
		next.ServeHTTP(&stallWriter{ResponseWriter: w, stall: stall}, r)
	})
}

// unflushedRoom is what a response may have written since its last flush
// and still be sure no byte of it went to the connection: net/http (and
// its HTTP/2 server) buffer at least this much of a response before
// writing any, so such a write cannot stall and needs no deadline. Most
// answers (a tool result of a few hundred bytes) are written so, without
// setting one.
const unflushedRoom = 2048

// stallWriter is a ResponseWriter whose writes and flushes fail once
// they have made no progress for stall. It is used by one goroutine at
// a time, as a ResponseWriter is.
type stallWriter struct {
	http.ResponseWriter
	rc        *http.ResponseController // of ResponseWriter, made at the first bounded write
	stall     time.Duration
	unflushed int // bytes written since the last flush, while within unflushedRoom
}

func (s *stallWriter) controller() *http.ResponseController {
	if s.rc == nil {
		s.rc = http.NewResponseController(s.ResponseWriter)
	}
	return s.rc
}

// bounded runs write with the connection's write deadline stall away,
// and clears it after: the server writes the response's end and later
// responses on the same connection without one (and an HTTP/2 stream
// whose deadline passed is reset, written to or not). A ResponseWriter
// that cannot set deadlines (a test's recorder) is written without.
func (s *stallWriter) bounded(write func() error) error {
	rc := s.controller()
	if rc.SetWriteDeadline(time.Now().Add(s.stall)) != nil {
		return write()
	}
	err := write()
	_ = rc.SetWriteDeadline(time.Time{})
	return err
}

func (s *stallWriter) Write(b []byte) (n int, err error) {
	if s.unflushed+len(b) <= unflushedRoom {
		s.unflushed += len(b)
		return s.ResponseWriter.Write(b) // buffered: no byte goes out
	}
	s.unflushed = unflushedRoom + 1 // bounded from now until a flush
	// A long write (a tool's answer of megabytes) goes in parts, each
	// bounded afresh: stall bounds a write that makes no progress, not
	// the time an honest slow client takes to read a whole answer.
	for len(b) > 0 && err == nil {
		part := b[:min(len(b), stallPart)]
		err = s.bounded(func() error {
			m, err := s.ResponseWriter.Write(part)
			n += m
			return err
		})
		b = b[len(part):]
	}
	return n, err
}

// stallPart is the most of a write that must go out within one stall:
// a client reading less than this in write_stall_timeout (a byte or so
// a second at the default) is taken to have stopped.
const stallPart = 32 << 10

// WriteHeader writes nothing to the connection (the header goes with
// the first write or flush); it needs no bound.

// FlushError flushes what is buffered to the client, bounded; an
// http.ResponseController's Flush calls it.
func (s *stallWriter) FlushError() error {
	s.unflushed = 0
	return s.bounded(s.controller().Flush)
}

// Flush is FlushError for callers that take an http.Flusher.
func (s *stallWriter) Flush() { _ = s.FlushError() }

// Hijack hands the connection over (a WebSocket upgrade takes an
// http.Hijacker), without a deadline: its new owner sets its own.
func (s *stallWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return s.controller().Hijack() }

// Unwrap lets an http.ResponseController reach the ResponseWriter
// beneath for what stallWriter does not do itself (deadlines, full
// duplex).
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var (
	_ http.Flusher  = (*stallWriter)(nil)
	_ http.Hijacker = (*stallWriter)(nil)
)

package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// StdioOptions configures [NewStdioConn]. The zero value (or nil) means
// the defaults.
type StdioOptions struct {
	// MaxMessageBytes bounds one line read, without its terminator, so a
	// peer cannot make the reader buffer without limit: a longer line
	// ends reading with a *[TooLongError]. Zero means
	// [DefaultMaxMessageBytes]. The read buffer grows with the lines
	// read, not to this size up front.
	MaxMessageBytes int64
	// AnswerTooLong makes a line longer than MaxMessageBytes a message
	// refused, not the end of reading: it is read to its newline and
	// dropped, unseen, and the peer is written a JSON-RPC error (id null,
	// -32600, naming the limit). For a peer whose lines are requests to
	// this side (`sluice wrap`'s client), so that one oversized call does
	// not end the session.
	AnswerTooLong bool
}

// NewStdioConn returns a Conn that reads newline-delimited messages from r
// and writes them to w, as an MCP server does on its stdin and stdout
// (the MCP stdio transport sends one JSON-RPC message per line). opts may
// be nil.
// Each message is written in the form [Compact] gives it, so no reader
// splits it into more than one line; one that is not JSON is refused with
// a *[MessageError].
// Read returns io.EOF once r ends. Empty lines are skipped and a final line
// without a newline still counts as a message.
//
// A goroutine reads r ahead of Read calls; it ends when r returns an
// error. Close closes r if it implements io.Closer, which ends that
// goroutine for pipes and sockets (not for a terminal or a blocking
// os.Stdin, where it ends with the process); w is left open. Write honours
// ctx only if w has a working SetWriteDeadline (os.Pipe ends do);
// otherwise ctx is only checked before writing.
func NewStdioConn(r io.Reader, w io.Writer, opts *StdioOptions) Conn {
	var limit int64
	if opts != nil {
		limit = opts.MaxMessageBytes
	}
	c := &stdioStreamConn{r: r, w: w, closed: make(chan struct{})}
	c.out = newStdioWriter(w, "transport: stdio write")
	var tooLong func(*TooLongError) error
	if opts != nil && opts.AnswerTooLong {
		tooLong = func(e *TooLongError) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return c.out.write(ctx, tooLongAnswer(e))
		}
	}
	c.in = startStdioReader(r, maxMessage(limit), c.closed, func(err error) error {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("transport: stdio read: %w", err)
	}, tooLong)
	return c
}

// tooLongAnswer is the error a peer is written for a line longer than the
// limit e names: it was not read, so it has no id.
func tooLongAnswer(e *TooLongError) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a message longer than %s (max_body_bytes) was dropped unread"}}`, sizeString(e.Limit))
}

var _ Conn = (*stdioStreamConn)(nil)

type stdioStreamConn struct {
	r      io.Reader
	w      io.Writer
	in     *stdioReader
	out    *stdioWriter
	closed chan struct{} // closed by Close

	closeOnce sync.Once
}

func (c *stdioStreamConn) Read(ctx context.Context) ([]byte, error) {
	return c.in.read(ctx, c.closed)
}

func (c *stdioStreamConn) Write(ctx context.Context, msg []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	return c.out.write(ctx, msg)
}

func (c *stdioStreamConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			rc.Close()
		}
	})
	return nil
}

// A stdioReader splits a stream into lines in its own goroutine, so that
// Read can honour its ctx while the stream blocks.
type stdioReader struct {
	lines chan []byte   // closed after the last line
	err   error         // why reading ended; written before lines is closed
	done  chan struct{} // closed when the goroutine has returned
}

// startStdioReader reads r, lines of at most limit bytes, until it fails
// or quit is closed; with tooLong set, a longer line is answered by it,
// skipped to its newline, and reading goes on (unless tooLong fails).
// finish turns
// the error that ended reading (io.EOF for a clean end, ErrClosed after
// quit) into the one Read reports; it runs on the reading goroutine before
// lines is closed, so it may block, for instance to reap a process.
func startStdioReader(r io.Reader, limit int64, quit <-chan struct{}, finish func(error) error, tooLong func(*TooLongError) error) *stdioReader {
	sr := &stdioReader{lines: make(chan []byte), done: make(chan struct{})}
	go func() {
		defer close(sr.done)
		br := bufio.NewReaderSize(r, 64<<10)
		var err error
	loop:
		for {
			var line []byte
			if line, err = stdioReadLine(br, limit); err != nil {
				var tle *TooLongError
				if tooLong == nil || !errors.As(err, &tle) {
					break
				}
				err = nil
				if tle.midLine {
					err = skipLine(br) // io.EOF: the stream ended inside it
				}
				if aerr := tooLong(tle); aerr != nil {
					err = aerr
				}
				if err != nil {
					break
				}
				continue
			}
			select {
			case sr.lines <- line:
			case <-quit:
				err = ErrClosed
				break loop
			}
		}
		sr.err = finish(err)
		close(sr.lines)
	}()
	return sr
}

func (sr *stdioReader) read(ctx context.Context, closed <-chan struct{}) ([]byte, error) {
	select {
	case <-closed:
		return nil, ErrClosed
	default:
	}
	select {
	case line, ok := <-sr.lines:
		if !ok {
			return nil, sr.err
		}
		return line, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-closed:
		return nil, ErrClosed
	}
}

// stdioReadLine returns the next non-blank line without its terminator
// ("\n" or "\r\n"), in a fresh slice, or a *TooLongError for a line
// longer than limit.
func stdioReadLine(br *bufio.Reader, limit int64) ([]byte, error) {
	for {
		var line []byte
		for {
			frag, err := br.ReadSlice('\n')
			if int64(len(line)+len(frag)) > limit+int64(len("\r\n")) {
				return nil, &TooLongError{What: "stdio message", Limit: limit, midLine: err != nil}
			}
			line = append(line, frag...)
			if err == nil || (err == io.EOF && len(line) > 0) {
				break
			}
			if err != bufio.ErrBufferFull {
				return nil, err
			}
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if int64(len(line)) > limit {
			return nil, &TooLongError{What: "stdio message", Limit: limit}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// skipLine reads br past the next newline.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// A stdioWriter writes one message per line, compacted (see [Compact]):
// the peer may split lines at LF, CR, CRLF or a Unicode line separator,
// and must find the message the gateway decided on and nothing else.
// After a write that may have sent part of a line the stream is broken
// for good: the peer could not find the next message boundary.
type stdioWriter struct {
	w        io.Writer
	deadline interface{ SetWriteDeadline(time.Time) error } // nil if w has no working deadline
	prefix   string                                         // starts error messages

	mu     sync.Mutex // guards the fields below
	broken error
}

func newStdioWriter(w io.Writer, prefix string) *stdioWriter {
	sw := &stdioWriter{w: w, prefix: prefix}
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Time{}) == nil {
		sw.deadline = d
	}
	return sw
}

func (sw *stdioWriter) write(ctx context.Context, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.broken != nil {
		return sw.broken
	}
	if sw.deadline != nil && ctx.Done() != nil {
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(fired)
			sw.deadline.SetWriteDeadline(time.Unix(1, 0))
		})
		defer func() {
			if !stop() {
				<-fired
				sw.deadline.SetWriteDeadline(time.Time{})
			}
		}()
	}
	// One Write per line; msg is Compact's own copy.
	n, err := sw.w.Write(append(msg, '\n'))
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = ctx.Err()
	}
	err = fmt.Errorf("%s: %w", sw.prefix, err)
	if n > 0 {
		sw.broken = fmt.Errorf("%w (stream broken: a message was cut short)", err)
	}
	return err
}

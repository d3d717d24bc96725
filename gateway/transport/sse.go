package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// An SSEEvent is one dispatched server-sent event. Fields hold the values
// of the fields seen in that event's block only: an empty ID means the
// block had no id field (see [SSEReader.LastEventID] for the sticky value),
// an empty Event means the default type "message", and Retry is the
// reconnection time in milliseconds as decimal digits, or empty.
type SSEEvent struct {
	ID, Event string
	Data      []byte
	Retry     string
}

// An SSEReader splits a text/event-stream into events following the
// WHATWG HTML "event stream interpretation" rules: lines end in CRLF, LF
// or CR; a leading byte order mark is skipped; comment lines (starting
// with a colon) and unknown fields are ignored; data lines are joined with
// LF; a block without data is not dispatched; an id containing NUL and a
// non-numeric retry are ignored. Bytes are passed through without UTF-8
// decoding. It is not safe for concurrent use.
type SSEReader struct {
	// MaxDataBytes bounds the data of one event, and a line to that plus
	// room for the field name, so a hostile peer cannot make the reader
	// buffer without limit: past it Next returns a *[TooLongError], and
	// the stream cannot be resynchronised. Zero means
	// [DefaultMaxMessageBytes]. Set it before the first call to Next.
	MaxDataBytes int64

	br     *bufio.Reader
	line   []byte
	lastID string
	skipLF bool // the previous line ended in CR, so a leading LF is its tail
	bomOK  bool // the first line has been read (a BOM is only skipped there)
}

// NewSSEReader returns a reader of the event stream r. Next reads from r
// only as far as it must to return the next event, so events of a live
// stream come out as they arrive.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{br: bufio.NewReader(r)}
}

// LastEventID returns the last event ID buffer: the value of the most
// recent id field read, which persists across events until another id
// field changes it. A reconnecting client sends it as Last-Event-ID.
func (r *SSEReader) LastEventID() string { return r.lastID }

// Next returns the next event. At the end of the stream it returns io.EOF,
// or io.ErrUnexpectedEOF if the stream ended inside an event, which is
// then discarded as the standard requires. Errors from the underlying
// reader are returned as they are.
func (r *SSEReader) Next() (SSEEvent, error) {
	limit := maxMessage(r.MaxDataBytes)
	var (
		ev      SSEEvent
		data    []byte
		hasData bool
		pending bool // a field has been seen since the last dispatch
	)
	for {
		line, err := r.readLine(limit)
		if err != nil {
			if err == io.EOF && (pending || len(line) > 0) {
				err = io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.Data = data[:len(data)-1] // drop the LF after the last line
				return ev, nil
			}
			// A block without data is not dispatched; its event type goes
			// with it, but id and retry have already taken effect.
			ev, pending = SSEEvent{}, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		pending = true
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(name) {
		case "data":
			if int64(len(data)+len(value)) > limit {
				return SSEEvent{}, &TooLongError{What: "server-sent event", Limit: limit}
			}
			data = append(data, value...)
			data = append(data, '\n')
			hasData = true
		case "event":
			ev.Event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
				r.lastID = ev.ID
			}
		case "retry":
			if len(value) > 0 && sseDigits(value) {
				ev.Retry = string(value)
			}
		}
	}
}

// readLine returns the next line without its terminator: at most limit
// bytes of data and its field name. The returned slice is valid until the
// next call. Partial input at the end of the stream is returned with
// io.EOF.
func (r *SSEReader) readLine(limit int64) ([]byte, error) {
	r.line = r.line[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return r.line, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if int64(len(r.line)+n) > limit+int64(len("data: ")) {
			return nil, &TooLongError{What: "server-sent event", Limit: limit}
		}
		r.line = append(r.line, buf[:n]...)
		if i < 0 {
			r.br.Discard(n)
			continue
		}
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1)
		if !r.bomOK {
			r.bomOK = true
			r.line = bytes.TrimPrefix(r.line, []byte("\uFEFF"))
		}
		return r.line, nil
	}
}

func sseDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// WriteSSEEvent writes ev as one event-stream block in a single call to
// w.Write: id, event and retry fields when set, one data line per line of
// ev.Data (at least one, so the event is dispatched even with empty data),
// and the blank line that ends it. CRLF and CR inside Data are line breaks
// like LF, so an [SSEReader] reads them back as LF. It fails without
// writing if a field could not be read back as given: ID or Event holding
// a line break, ID holding NUL, or Retry holding anything but digits.
func WriteSSEEvent(w io.Writer, ev SSEEvent) error {
	if strings.ContainsAny(ev.ID, "\r\n\x00") {
		return fmt.Errorf("transport: SSE id %q contains CR, LF or NUL", ev.ID)
	}
	if strings.ContainsAny(ev.Event, "\r\n") {
		return fmt.Errorf("transport: SSE event type %q contains CR or LF", ev.Event)
	}
	if ev.Retry != "" && !sseDigits([]byte(ev.Retry)) {
		return fmt.Errorf("transport: SSE retry %q is not a decimal number", ev.Retry)
	}
	var b bytes.Buffer
	b.Grow(len(ev.Data) + len(ev.ID) + len(ev.Event) + 32)
	if ev.ID != "" {
		b.WriteString("id: " + ev.ID + "\n")
	}
	if ev.Event != "" {
		b.WriteString("event: " + ev.Event + "\n")
	}
	if ev.Retry != "" {
		b.WriteString("retry: " + ev.Retry + "\n")
	}
	data := ev.Data
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			b.WriteString("data: ")
			b.Write(data)
			b.WriteString("\n\n")
			break
		}
		b.WriteString("data: ")
		b.Write(data[:i])
		b.WriteByte('\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteSSEMessage writes the JSON-RPC message msg as one "message" event,
// in the form [Compact] gives it: one data line, however the reader splits
// lines. A msg that is not JSON is refused with a *[MessageError] and
// nothing is written.
func WriteSSEMessage(w io.Writer, msg []byte) error {
	msg, err := Compact(msg)
	if err != nil {
		return err
	}
	return WriteSSEEvent(w, SSEEvent{Event: "message", Data: msg})
}

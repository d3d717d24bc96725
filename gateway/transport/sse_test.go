package transport

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// sseReadAll reads events until an error and returns them with that error.
func sseReadAll(r *SSEReader) ([]SSEEvent, error) {
	var evs []SSEEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func sseFormat(evs []SSEEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "{id=%q event=%q retry=%q data=%q}", ev.ID, ev.Event, ev.Retry, ev.Data)
	}
	return b.String()
}

func TestSSEReader(t *testing.T) {
	data := func(s string) SSEEvent { return SSEEvent{Data: []byte(s)} }
	tests := []struct {
		name    string
		in      string
		want    []SSEEvent
		wantErr error
		lastID  string
	}{
		{name: "empty stream", in: "", wantErr: io.EOF},
		{name: "one event", in: "data: hello\n\n", want: []SSEEvent{data("hello")}, wantErr: io.EOF},
		{name: "multi-line data", in: "data: a\ndata: b\n\n", want: []SSEEvent{data("a\nb")}, wantErr: io.EOF},
		{name: "CRLF", in: "data: a\r\ndata: b\r\n\r\n", want: []SSEEvent{data("a\nb")}, wantErr: io.EOF},
		{name: "CR", in: "data: a\rdata: b\r\rdata: c\r\r", want: []SSEEvent{data("a\nb"), data("c")}, wantErr: io.EOF},
		{name: "mixed endings", in: "data: a\r\ndata: b\rdata: c\n\r\n", want: []SSEEvent{data("a\nb\nc")}, wantErr: io.EOF},
		{name: "CR then LF is one break", in: "data: a\r\n\r\ndata: b\n\n", want: []SSEEvent{data("a"), data("b")}, wantErr: io.EOF},
		{name: "BOM", in: "\uFEFFdata: x\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF},
		{name: "BOM only at start", in: "data: x\n\n\uFEFFdata: y\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF},
		{name: "comments", in: ": ping\n\n:\ndata: x\n: between\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF},
		{name: "no space after colon", in: "data:x\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF},
		{name: "only one space stripped", in: "data:  x \n\n", want: []SSEEvent{data(" x ")}, wantErr: io.EOF},
		{name: "field without colon", in: "data\n\n", want: []SSEEvent{data("")}, wantErr: io.EOF},
		{name: "empty data lines", in: "data:\ndata:\n\n", want: []SSEEvent{data("\n")}, wantErr: io.EOF},
		{name: "colon in value", in: "data: {\"a\":1}\n\n", want: []SSEEvent{data(`{"a":1}`)}, wantErr: io.EOF},
		{
			name:    "all fields",
			in:      "event: endpoint\nid: 7\nretry: 1500\ndata: /m?s=1\n\n",
			want:    []SSEEvent{{ID: "7", Event: "endpoint", Retry: "1500", Data: []byte("/m?s=1")}},
			wantErr: io.EOF,
			lastID:  "7",
		},
		{name: "id with NUL ignored", in: "id: 1\n\nid: a\x00b\ndata: x\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF, lastID: "1"},
		{name: "bad retry ignored", in: "retry: 15a\ndata: x\n\nretry:\ndata: y\n\n", want: []SSEEvent{data("x"), data("y")}, wantErr: io.EOF},
		{
			name:    "block without data not dispatched",
			in:      "event: foo\nid: 3\n\ndata: x\n\n",
			want:    []SSEEvent{data("x")},
			wantErr: io.EOF,
			lastID:  "3",
		},
		{name: "id persists", in: "id: 3\ndata: x\n\ndata: y\n\n", want: []SSEEvent{{ID: "3", Data: []byte("x")}, data("y")}, wantErr: io.EOF, lastID: "3"},
		{name: "empty id resets", in: "id: 3\ndata: x\n\nid\ndata: y\n\n", want: []SSEEvent{{ID: "3", Data: []byte("x")}, data("y")}, wantErr: io.EOF, lastID: ""},
		{name: "unknown fields", in: "foo: bar\nData: no\ndata: x\n\n", want: []SSEEvent{data("x")}, wantErr: io.EOF},
		{name: "EOF inside event", in: "data: x\n\ndata: y\n", want: []SSEEvent{data("x")}, wantErr: io.ErrUnexpectedEOF},
		{name: "EOF inside line", in: "data: x", wantErr: io.ErrUnexpectedEOF},
		{name: "EOF after comment", in: ": hi\n", wantErr: io.EOF},
		{name: "trailing CR at EOF", in: "data: x\r\r", want: []SSEEvent{data("x")}, wantErr: io.EOF},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				r := NewSSEReader(rd.wrap(strings.NewReader(tt.in)))
				got, err := sseReadAll(r)
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error: got %v, want %v", err, tt.wantErr)
				}
				if g, w := sseFormat(got), sseFormat(tt.want); g != w {
					t.Errorf("events:\ngot  %s\nwant %s", g, w)
				}
				if got := r.LastEventID(); got != tt.lastID {
					t.Errorf("LastEventID: got %q, want %q", got, tt.lastID)
				}
			})
		}
	}
}

// TestSSEReaderStreams checks that Next returns an event as soon as the
// blank line that ends it has arrived, without reading ahead: a live
// stream would otherwise hold events back until the next one is sent.
// The CR line ending is the hard case, as a CRLF could still follow it.
func TestSSEReaderStreams(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	r := NewSSEReader(pr)
	for i, chunk := range []string{"data: a\r\r", "\ndata: b\n\n", "data: c\r\n\r\n"} {
		go func() {
			if _, err := pw.Write([]byte(chunk)); err != nil {
				t.Errorf("write: %v", err)
			}
		}()
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("Next %d: %v", i, err)
		}
		if got, want := string(ev.Data), string(rune('a'+i)); got != want {
			t.Errorf("event %d: got %q, want %q", i, got, want)
		}
	}
	pw.Close()
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after close: got %v, want io.EOF", err)
	}
}

func TestSSEReaderLimits(t *testing.T) {
	tests := []struct {
		name    string
		limit   int64 // MaxDataBytes
		stream  string
		wantLen int // of the event's data; -1: a *TooLongError
	}{
		{"16 MiB data fits", 0, "data: " + strings.Repeat("x", DefaultMaxMessageBytes) + "\n\n", DefaultMaxMessageBytes},
		{"long line", 0, ": " + strings.Repeat("x", 2*DefaultMaxMessageBytes) + "\n\n", -1},
		{"long data in many lines", 0, "data: " + strings.Repeat("x", DefaultMaxMessageBytes/2) + "\ndata: " + strings.Repeat("x", DefaultMaxMessageBytes/2) + "\n\n", -1},
		{"data at a set limit", 1000, "data: " + strings.Repeat("x", 500) + "\r\ndata: " + strings.Repeat("x", 499) + "\n\n", 1000},
		{"data past a set limit", 1000, "data: " + strings.Repeat("x", 1001) + "\n\n", -1},
		{"many lines past a set limit", 1000, "data: " + strings.Repeat("x", 500) + "\ndata: " + strings.Repeat("x", 500) + "\n\n", -1},
		{"long line past a set limit", 1000, ": " + strings.Repeat("x", 1010) + "\n\n", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.stream))
			r.MaxDataBytes = tt.limit
			ev, err := r.Next()
			if tt.wantLen < 0 {
				want := TooLongError{What: "server-sent event", Limit: cmp.Or(tt.limit, DefaultMaxMessageBytes)}
				if got, ok := errors.AsType[*TooLongError](err); !ok || *got != want {
					t.Errorf("got %v, want %v", err, &want)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if len(ev.Data) != tt.wantLen {
				t.Errorf("data length: got %d, want %d", len(ev.Data), tt.wantLen)
			}
		})
	}
}

func TestWriteSSEEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   SSEEvent
		want string
	}{
		{name: "data only", ev: SSEEvent{Data: []byte(`{"a":1}`)}, want: "data: {\"a\":1}\n\n"},
		{name: "empty data", ev: SSEEvent{}, want: "data: \n\n"},
		{
			name: "all fields",
			ev:   SSEEvent{ID: "1", Event: "message", Retry: "10", Data: []byte("x")},
			want: "id: 1\nevent: message\nretry: 10\ndata: x\n\n",
		},
		{name: "lines", ev: SSEEvent{Data: []byte("a\nb\r\nc\rd\n")}, want: "data: a\ndata: b\ndata: c\ndata: d\ndata: \n\n"},
		{name: "leading space kept", ev: SSEEvent{Event: " x", Data: []byte(" y")}, want: "event:  x\ndata:  y\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSSEEvent(&b, tt.ev); err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	bad := []SSEEvent{
		{ID: "a\nb"},
		{ID: "a\rb"},
		{ID: "a\x00b"},
		{Event: "a\nb"},
		{Retry: "1s"},
		{Retry: "-1"},
	}
	for _, ev := range bad {
		var b bytes.Buffer
		if err := WriteSSEEvent(&b, ev); err == nil {
			t.Errorf("WriteSSEEvent(%+v): got nil error, want one", ev)
		}
		if b.Len() != 0 {
			t.Errorf("WriteSSEEvent(%+v) wrote %q, want nothing", ev, b.String())
		}
	}
}

// TestSSERoundTrip writes events and reads them back.
func TestSSERoundTrip(t *testing.T) {
	evs := []SSEEvent{
		{Event: "endpoint", Data: []byte("/message?sessionId=abc")},
		{ID: "42", Event: "message", Data: []byte("{\n  \"jsonrpc\": \"2.0\"\n}")},
		{Retry: "3000", Data: []byte("")},
		{ID: "43", Data: []byte(": not a comment\n\nstill data")},
	}
	var b bytes.Buffer
	for _, ev := range evs {
		if err := WriteSSEEvent(&b, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sseReadAll(NewSSEReader(&b))
	if err != io.EOF {
		t.Errorf("error: got %v, want io.EOF", err)
	}
	if g, w := sseFormat(got), sseFormat(evs); g != w {
		t.Errorf("events:\ngot  %s\nwant %s", g, w)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"), "1", "message", []byte("x\ny"))
	f.Add([]byte("\uFEFF: c\rid: 1\revent: e\rretry: 5\rdata\r\r"), "", "", []byte(""))
	f.Add([]byte("data: x\n"), "a\x00", "e\n", []byte("a\r\nb\rc"))
	f.Fuzz(func(t *testing.T, stream []byte, id, event string, data []byte) {
		// Whatever the bytes, the reader stops with an error and what it
		// dispatched can be written and read back unchanged.
		r := NewSSEReader(bytes.NewReader(stream))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			sseCheckRoundTrip(t, ev, ev)
		}

		ev := SSEEvent{ID: id, Event: event, Data: data}
		var b bytes.Buffer
		err := WriteSSEEvent(&b, ev)
		valid := !strings.ContainsAny(id, "\r\n\x00") && !strings.ContainsAny(event, "\r\n")
		if (err == nil) != valid {
			t.Fatalf("WriteSSEEvent(%+v): got error %v, want error %v", ev, err, !valid)
		}
		if err != nil {
			return
		}
		want := ev
		want.Data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		sseCheckRoundTrip(t, ev, want)
	})
}

func sseCheckRoundTrip(t *testing.T, ev, want SSEEvent) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSSEEvent(&b, ev); err != nil {
		t.Fatalf("WriteSSEEvent(%+v): %v", ev, err)
	}
	r := NewSSEReader(&b)
	got, err := r.Next()
	if err != nil {
		t.Fatalf("reading back %q: %v", b.String(), err)
	}
	if got.ID != want.ID || got.Event != want.Event || got.Retry != want.Retry || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("read back %q:\ngot  %s\nwant %s", b.String(), sseFormat([]SSEEvent{got}), sseFormat([]SSEEvent{want}))
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the event: got %v, want io.EOF", err)
	}
}

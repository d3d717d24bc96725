package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// A hidden call: JSON whitespace or a string with line terminators around
// a tools/call, which a reader that splits lines there would execute.
const frameCall = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send_email"}}`

var frameSmuggled = []struct{ name, msg, want string }{
	{"CR", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"x\":\r" + frameCall + "\r}}",
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":` + frameCall + `}}`},
	{"CRLF", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"x\":\r\n" + frameCall + "\r\n}}",
		`{"jsonrpc":"2.0","method":"n","params":{"x":` + frameCall + `}}`},
	{"LF", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"x\":\n" + frameCall + "\n}}",
		`{"jsonrpc":"2.0","method":"n","params":{"x":` + frameCall + `}}`},
	{"outer whitespace", " \t\r\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n\t ", `{"jsonrpc":"2.0","method":"n"}`},
	{"U+2028 and U+2029", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"x\":\"\u2028" + strings.ReplaceAll(frameCall, `"`, `\"`) + "\u2029\"}}",
		`{"jsonrpc":"2.0","method":"n","params":{"x":"\u2028` + strings.ReplaceAll(frameCall, `"`, `\"`) + `\u2029"}}`},
	{"NEL", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"x\":\"a\u0085b\",\"\u0085\":\"\\\\\u0085\"}}",
		`{"jsonrpc":"2.0","method":"n","params":{"x":"a\u0085b","\u0085":"\\\u0085"}}`},
	{"other non-ASCII kept", "{\"jsonrpc\":\"2.0\",\"method\":\"é\u2027\u00a0\"}", "{\"jsonrpc\":\"2.0\",\"method\":\"é\u2027\u00a0\"}"},
}

// frameBad are messages no Conn sends.
var frameBad = []string{"", " \r\n", "{", `{"a":1} {"b":2}`, "{\"a\":\"\xff\"}", "{\"a\":\"x\ny\"}", "\x00{}"}

func TestCompact(t *testing.T) {
	for _, tt := range frameSmuggled {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.msg)
			got, err := Compact(in)
			if err != nil {
				t.Fatalf("Compact: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if string(in) != tt.msg {
				t.Errorf("Compact modified its input: %q", in)
			}
		})
	}
	for _, bad := range frameBad {
		var msgErr *MessageError
		if got, err := Compact([]byte(bad)); !errors.As(err, &msgErr) {
			t.Errorf("Compact(%q): got %q, %v, want a *MessageError", bad, got, err)
		}
	}
}

// TestConnsWriteCompact checks that every Conn puts on the wire exactly
// the compact form of what it was given, and refuses what is not JSON
// without writing anything.
func TestConnsWriteCompact(t *testing.T) {
	stdioNoLeaks(t)
	// Each opens a Conn and returns a function giving the bytes of the
	// next message as its peer received them, or nil when the test would
	// block (nothing was sent).
	kinds := []struct {
		name  string
		frame func(msg string) string // how the compact msg looks on the wire
		open  func(t *testing.T) (Conn, func() []byte)
	}{
		{"stdio", func(m string) string { return m + "\n" }, frameStdio},
		{"websocket", func(m string) string { return m }, frameWS},
		{"sse server", func(m string) string { return "event: message\ndata: " + m + "\n\n" }, frameSSEServer},
		{"sse client", func(m string) string { return m }, func(t *testing.T) (Conn, func() []byte) {
			return framePoster(t, func(h http.Handler) Dialer {
				ts := httptest.NewServer(h)
				t.Cleanup(ts.Close)
				return &SSEDialer{URL: ts.URL + "/sse"}
			})
		}},
		{"streamable http client", func(m string) string { return m }, func(t *testing.T) (Conn, func() []byte) {
			return framePoster(t, func(h http.Handler) Dialer {
				ts := httptest.NewServer(h)
				t.Cleanup(ts.Close)
				return &StreamableHTTPDialer{URL: ts.URL + "/mcp"}
			})
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			c, wire := k.open(t)
			for _, tt := range frameSmuggled {
				mustWrite(t, c, tt.msg)
				if got, want := string(wire()), k.frame(tt.want); got != want {
					t.Errorf("%s: got %q on the wire, want %q", tt.name, got, want)
				}
			}
			for _, bad := range frameBad {
				var msgErr *MessageError
				if err := c.Write(testContext(t), []byte(bad)); !errors.As(err, &msgErr) {
					t.Errorf("Write(%q): got %v, want a *MessageError", bad, err)
				}
			}
			// Nothing of the refused messages reached the peer: the next
			// thing it gets is the next good message.
			mustWrite(t, c, `{"jsonrpc":"2.0","method":"last"}`)
			if got, want := string(wire()), k.frame(`{"jsonrpc":"2.0","method":"last"}`); got != want {
				t.Errorf("after refusals: got %q, want %q", got, want)
			}
		})
	}
}

func frameStdio(t *testing.T) (Conn, func() []byte) {
	c, _, out := stdioPipeConn(t)
	lines := make(chan []byte, 16)
	go func() {
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	t.Cleanup(func() { out.Close() })
	return c, func() []byte { return <-lines }
}

func frameWS(t *testing.T) (Conn, func() []byte) {
	s := newWSServer(t, nil, 0)
	ws, _, err := websocket.DefaultDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := s.accept(t)
	return c, func() []byte {
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("reading a frame: %v", err)
		}
		return b
	}
}

func frameSSEServer(t *testing.T) (Conn, func() []byte) {
	conns := make(chan Conn, 1)
	s := &SSEServer{KeepAlive: -1, OnSession: func(ctx context.Context, _ string, c Conn) {
		conns <- c
		<-ctx.Done()
	}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	resp, err := ts.Client().Get(ts.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	block := func() []byte {
		var b []byte
		for !bytes.HasSuffix(b, []byte("\n\n")) {
			line, err := br.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			b = append(b, line...)
		}
		return b
	}
	block() // the endpoint event
	return <-conns, block
}

// framePoster dials a client Conn that POSTs messages to a server built
// by serve, and returns a function giving each POST's body.
func framePoster(t *testing.T, serve func(http.Handler) Dialer) (Conn, func() []byte) {
	bodies := make(chan []byte, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if r.URL.Path == "/sse" {
				w.Header().Set("Content-Type", "text/event-stream")
				WriteSSEEvent(w, SSEEvent{Event: "endpoint", Data: []byte("/message")})
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusAccepted)
	})
	c := mustDial(t, serve(h))
	return c, func() []byte { return <-bodies }
}

// TestCompactValid checks that CompactValid gives exactly what Compact
// gives for valid JSON, taking the shortcut only where that is so.
func TestCompactValid(t *testing.T) {
	valid := []string{frameCall, `{"a":"x y","b":[1,2.5e3,true,null],"c":{"d":"\"} {\\"}}`, `"x"`, `1`, `[]`,
		`{"s":"\\"}`, `{"s":"\" ","t":1}`}
	for _, tt := range frameSmuggled {
		valid = append(valid, tt.msg)
	}
	for _, msg := range valid {
		want, err := Compact([]byte(msg))
		if err != nil {
			t.Fatalf("Compact(%q): %v", msg, err)
		}
		got, err := CompactValid([]byte(msg))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("CompactValid(%q) = %q, %v; want %q", msg, got, err, want)
		}
	}
	for _, bad := range frameBad[:2] {
		if got, err := CompactValid([]byte(bad)); err == nil {
			t.Errorf("CompactValid(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzCompactValid: for every valid JSON value, CompactValid and Compact
// agree byte for byte.
func FuzzCompactValid(f *testing.F) {
	for _, tt := range frameSmuggled {
		f.Add(tt.msg)
	}
	f.Add(frameCall)
	f.Add(`{"a":"\\\" "}`)
	f.Fuzz(func(t *testing.T, msg string) {
		want, err := Compact([]byte(msg))
		if err != nil {
			return
		}
		got, err := CompactValid([]byte(msg))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("CompactValid(%q) = %q, %v; want %q", msg, got, err, want)
		}
	})
}

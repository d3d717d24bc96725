package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestStdioAnswerTooLong: with AnswerTooLong, a line past the limit is
// answered with a JSON-RPC error naming the limit, dropped unread, and
// the lines after it are read as before — whether the reader stopped
// inside it, or had read it whole (a line of limit+1 bytes: its newline
// was read, so the next line must not be skipped), or it ends the stream.
// Without the option it ends reading.
func TestStdioAnswerTooLong(t *testing.T) {
	const limit = 100
	in := `{"id":1}` + "\n" +
		strings.Repeat("x", 300) + "\n" +
		`{"id":2}` + "\n" +
		strings.Repeat("y", limit+1) + "\n" +
		`{"id":3}` + "\r\n" +
		strings.Repeat("z", 200) // no newline: the stream ends inside it
	var out bytes.Buffer
	c := NewStdioConn(io.NopCloser(strings.NewReader(in)), &out, &StdioOptions{MaxMessageBytes: limit, AnswerTooLong: true})
	defer c.Close()
	var got []string
	for {
		b, err := c.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != `{"id":1} {"id":2} {"id":3}` {
		t.Errorf("read %q, want the three short lines", got)
	}
	answers := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(answers) != 3 {
		t.Fatalf("wrote %q, want three answers", out.String())
	}
	for _, a := range answers {
		if !strings.Contains(a, `"id":null`) || !strings.Contains(a, `-32600`) || !strings.Contains(a, "100 bytes") {
			t.Errorf("answer %s: want an invalid-request error with id null naming the limit", a)
		}
	}

	// Without the option a long line ends reading, as before.
	c2 := NewStdioConn(io.NopCloser(strings.NewReader(in)), io.Discard, &StdioOptions{MaxMessageBytes: limit})
	defer c2.Close()
	if _, err := c2.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	var tle *TooLongError
	if _, err := c2.Read(context.Background()); !errors.As(err, &tle) {
		t.Errorf("without AnswerTooLong: got %v, want a TooLongError", err)
	}
}

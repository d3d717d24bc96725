package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// chunks is a reader that returns its strings one per Read, as a pipe
// does the writes of a child that writes a line in pieces (Rust's
// eprintln!, an unbuffered C stderr written a word at a time).
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	(*c)[0] = (*c)[0][n:]
	if (*c)[0] == "" {
		*c = (*c)[1:]
	}
	return n, nil
}

// stderrLines copies what a child wrote to its stderr through stderrLog,
// as os/exec does, and returns the lines logged.
func stderrLines(t *testing.T, writes ...string) []string {
	t.Helper()
	var logs lockedBuffer
	r := chunks(writes)
	if _, err := io.Copy(stderrLog{slog.New(slog.NewJSONHandler(&logs, nil)), "kid"}, &r); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Line string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		lines = append(lines, rec.Line)
	}
	return lines
}

// TestStderrLogLineInPieces: a line the child wrote in several writes was
// logged as a record per write, the line cut where the pipe's reads fell.
func TestStderrLogLineInPieces(t *testing.T) {
	got := stderrLines(t, "error: ", "config file", " not found\n", "second\n", "last, no newline")
	want := []string{"error: config file not found", "second", "last, no newline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("logged lines %q, want %q", got, want)
	}
}

// TestStderrLogLongLineBounded: a line longer than the buffer is logged
// in pieces of the buffer's size, not held whole: memory stays bounded.
func TestStderrLogLongLineBounded(t *testing.T) {
	long := strings.Repeat("x", 3*stderrLineMax+10)
	got := stderrLines(t, long, "\nnext\n")
	if len(got) != 5 || got[4] != "next" {
		t.Fatalf("logged %d lines, last %q; want 4 pieces and next", len(got), got[len(got)-1])
	}
	for i, l := range got[:3] {
		if len(l) != stderrLineMax {
			t.Errorf("piece %d: %d bytes, want %d", i, len(l), stderrLineMax)
		}
	}
}

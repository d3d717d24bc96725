package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
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
	var logs logBuffer
	r := chunks(writes)
	if _, err := io.Copy(newStderrLog(slog.New(slog.NewJSONHandler(&logs, nil)), "kid", nil), &r); err != nil {
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

// TestStderrLogLongLineBounded: of a line longer than the bound the
// start is logged, to its last space, and the rest read and counted, not
// held whole nor logged in pieces: memory and the record stay bounded.
func TestStderrLogLongLineBounded(t *testing.T) {
	long := strings.Repeat("word ", stderrLineMax) // 5 bounds' worth
	got := stderrLines(t, long, "\nnext\n")
	if len(got) != 2 || got[1] != "next" {
		t.Fatalf("logged %d lines, last %q; want the long one cut and next", len(got), got[len(got)-1])
	}
	if want := long[:strings.LastIndex(long[:stderrLineMax], " ")]; got[0] != want {
		t.Errorf("long line logged as %d bytes, want its first %d to its last space", len(got[0]), len(want))
	}
}

// TestAttackStderrLogTokenAcrossBound: a line longer than the bound was
// logged in pieces, each scrubbed on its own: a key the bound cut
// through had its end logged as the start of the next piece, where
// nothing marks it as one, and its start, too short for the scrubber to
// know it, at the end of the first. The word the bound cuts is not
// logged, nor the rest of the line.
func TestAttackStderrLogTokenAcrossBound(t *testing.T) {
	const key = "sk-proj-Qm7vX2pLr9TzK4wYb8NcJd3FhGs6"
	line := strings.Repeat("x", stderrLineMax-12-1) + " " + key + " done\n" // cut after "sk-proj-Qm7v"
	for _, l := range stderrLines(t, line) {
		for _, part := range []string{"Qm7v", key[len(key)-8:]} {
			if strings.Contains(l, part) {
				t.Errorf("logged %q, which holds %q of the key", l[max(0, len(l)-80):], part)
			}
		}
	}
}

// TestAttackStderrLogTokenAcrossBoundNoSpace: a line over the bound was
// cut at its last space or tab, and one with none (compact JSON, a
// query string) was logged to the bound whole, so a key the bound cut
// through was logged up to it, too short for the scrubber to know. The
// cut comes at the last byte that cannot be in a token.
func TestAttackStderrLogTokenAcrossBoundNoSpace(t *testing.T) {
	const key = "sk-proj-Qm7vX2pLr9TzK4wYb8NcJd3FhGs6"
	for _, head := range []string{`{"pad":"`, `/v1?pad=`} {
		pad := strings.Repeat("x", stderrLineMax-len(head)-len(`","v":"`)-12)
		line := head + pad + `","v":"` + key + `"}` + "\n" // cut after "sk-proj-Qm7v"
		logged := stderrLines(t, line)
		if len(logged) == 0 || !strings.Contains(logged[0], pad) {
			t.Errorf("the line before the key was not logged: %q", logged)
		}
		for _, l := range logged {
			if strings.Contains(l, "Qm7v") {
				t.Errorf("logged %q, which holds the start of the key", l[max(0, len(l)-80):])
			}
		}
	}
}

// stalledHandler is a log sink that stalls: each record waits in Handle
// until release is closed. It counts the records handled and the most
// goroutines that waited in it at once.
type stalledHandler struct {
	release chan struct{}

	mu                    sync.Mutex
	waiting, most, logged int
}

func (h *stalledHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stalledHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stalledHandler) WithGroup(string) slog.Handler            { return h }

func (h *stalledHandler) Handle(context.Context, slog.Record) error {
	h.mu.Lock()
	h.waiting++
	h.most = max(h.most, h.waiting)
	h.mu.Unlock()
	<-h.release
	h.mu.Lock()
	h.waiting--
	h.logged++
	h.mu.Unlock()
	return nil
}

// TestAttackStderrStalledSinkOneLogger: each child's stderr was logged by
// a goroutine of its own, which a stalled log sink held after the child
// ended: a child that crashed and was restarted again and again left a
// goroutine, and up to 64 lines, per restart. An upstream's children
// share one logger, and it ends once their stderrs are read and its
// lines logged.
func TestAttackStderrStalledSinkOneLogger(t *testing.T) {
	h := &stalledHandler{release: make(chan struct{})}
	s := newStderrLog(slog.New(h), "kid", nil)
	for range 3 { // a child, restarted twice
		if _, err := io.Copy(s, strings.NewReader("starting\n")); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	most := h.most
	h.mu.Unlock()
	if most != 1 {
		t.Errorf("%d goroutines waited on the stalled log sink at once, want 1", most)
	}
	close(h.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		logged := h.logged
		h.mu.Unlock()
		s.mu.Lock()
		logging := s.logging
		s.mu.Unlock()
		if logged == 3 && !logging {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the sink recovered: %d lines logged (want 3), logger running %v (want ended)", logged, logging)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countedDrops is a stderrMetrics summing the lines it is told of.
type countedDrops struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countedDrops) StderrDropped(upstream string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[upstream] += n
}

// TestStderrDroppedMetric: lines over the rate bound were counted only in
// a log record; the metric sluice.stdio.stderr_dropped counts them too,
// by upstream, as many as the record says.
func TestStderrDroppedMetric(t *testing.T) {
	var logs logBuffer
	m := &countedDrops{n: map[string]int{}}
	s := newStderrLog(slog.New(slog.NewJSONHandler(&logs, nil)), "kid", m)
	const lines = 3 * stderrBurst
	if _, err := io.Copy(s, strings.NewReader(strings.Repeat("noise\n", lines))); err != nil {
		t.Fatal(err)
	}
	var logged, reported int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Msg     string
			Dropped int
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		switch rec.Msg {
		case "stdio upstream stderr":
			logged++
		case "stdio upstream stderr lines dropped":
			reported += rec.Dropped
		}
	}
	m.mu.Lock()
	counted := m.n["kid"]
	m.mu.Unlock()
	if reported == 0 || counted != reported || logged+counted != lines {
		t.Fatalf("%d lines: %d logged, %d reported dropped in the log, %d counted by the metric; want the metric to count every line not logged", lines, logged, reported, counted)
	}
}

// TestStderrLogOverlappingChildren: a restarted child's stderr may be
// read while the old child's is still draining (a grandchild holding the
// pipe open). The shared logger must neither end when the first of them
// ends, losing the other's later lines, nor outlive both.
func TestStderrLogOverlappingChildren(t *testing.T) {
	var logs logBuffer
	s := newStderrLog(slog.New(slog.NewJSONHandler(&logs, nil)), "kid", nil)
	oldR, oldW := io.Pipe()
	newR, newW := io.Pipe()
	done := make(chan error, 2)
	for _, r := range []io.Reader{oldR, newR} {
		go func() {
			_, err := io.Copy(s, r)
			done <- err
		}()
	}
	write := func(w *io.PipeWriter, line string) {
		t.Helper()
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(oldW, "old 1")
	write(newW, "new 1")
	oldW.Close() // the old child's stderr ends; the new one's goes on
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	write(newW, "new 2")
	newW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		logging, readers := s.logging, s.readers
		s.mu.Unlock()
		if !logging && readers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("both children's stderr ended: logger running %v, %d readers (want ended, 0)", logging, readers)
		}
	}
	got := logs.String()
	for _, l := range []string{"old 1", "new 1", "new 2"} {
		if !strings.Contains(got, `"line":"`+l+`"`) {
			t.Errorf("line %q not logged; the log:\n%s", l, got)
		}
	}
}

package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// stdioHelperEnv switches the test binary into a tiny MCP-ish stdio
// server when TestStdioHelperProcess runs in a child process.
const stdioHelperEnv = "SLUICE_STDIO_HELPER"

// TestStdioHelperProcess is not a test: run by stdioHelperDialer in a
// child process, it becomes the helper named by $SLUICE_STDIO_HELPER.
func TestStdioHelperProcess(t *testing.T) {
	mode := os.Getenv(stdioHelperEnv)
	if mode == "" {
		return
	}
	os.Exit(stdioHelper(mode))
}

// stdioHelperDialer starts the test binary as the helper in mode.
func stdioHelperDialer(t *testing.T, mode string, env ...string) *StdioDialer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &StdioDialer{
		Command: exe,
		Args:    []string{"-test.run=^TestStdioHelperProcess$"},
		// The race detector would otherwise linger 1s at every child exit.
		Env: append([]string{stdioHelperEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
	}
}

// stdioHelper runs a helper and returns its exit code. Modes:
//
//	echo          answers initialize, echo, whoami; hang gets no answer; crash exits 3
//	exit7         writes one notification, exits 7
//	ignore-stdin  writes "ready", keeps running after stdin closes
//	ignore-term   like ignore-stdin, and ignores SIGTERM too
//	grandchild    leaves a grandchild holding stdout, writes one line, exits 5
//	wait-stdin    exits when stdin closes
func stdioHelper(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	ready := map[string]any{"jsonrpc": "2.0", "method": "ready"}
	switch mode {
	case "exit7":
		send(map[string]any{"jsonrpc": "2.0", "method": "bye"})
		return 7
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fallthrough
	case "ignore-stdin":
		send(ready)
		io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour) // until a signal ends it
		return 0
	case "wait-stdin":
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "grandchild":
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "-test.run=^TestStdioHelperProcess$")
		cmd.Env = append(os.Environ(), stdioHelperEnv+"=wait-stdin")
		cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
		if err := cmd.Start(); err != nil {
			return 1
		}
		send(ready)
		return 5
	case "echo":
	default:
		return 2
	}

	os.Stderr.WriteString("helper started\n")
	var initID json.RawMessage
	initialized := false
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		var result any
		switch m.Method {
		case "initialize":
			initID = m.ID
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "helper", "version": "1"}}
		case "notifications/initialized":
			initialized = true
			continue
		case "echo":
			result = map[string]any{"params": m.Params}
		case "whoami":
			dir, _ := os.Getwd()
			result = map[string]any{"pid": os.Getpid(), "initID": initID, "initialized": initialized, "env": os.Getenv("SLUICE_TEST_VAR"), "dir": dir}
		case "environ":
			result = map[string]any{"environ": os.Environ()}
		case "hang":
			continue
		case "crash":
			os.Stderr.WriteString("crashing\n")
			return 3
		default:
			continue
		}
		send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}
}

// stdioNoLeaks fails t if goroutines started during t outlive it.
func stdioNoLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustDial(t *testing.T, d Dialer) Conn {
	t.Helper()
	c, err := d.Dial(testContext(t))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustWrite(t *testing.T, c Conn, msg string) {
	t.Helper()
	if err := c.Write(testContext(t), []byte(msg)); err != nil {
		t.Fatalf("Write(%.80s): %v", msg, err)
	}
}

func mustRead(t *testing.T, c Conn) []byte {
	t.Helper()
	msg, err := c.Read(testContext(t))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return msg
}

// rpcResponse is a decoded JSON-RPC response, for checking.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeResponse(t *testing.T, msg []byte) rpcResponse {
	t.Helper()
	var r rpcResponse
	if err := json.Unmarshal(msg, &r); err != nil {
		t.Fatalf("decoding %.200s: %v", msg, err)
	}
	return r
}

func TestStdioRoundTrip(t *testing.T) {
	stdioNoLeaks(t)
	tests := []struct {
		name   string
		params string
	}{
		{"small", `{"text":"hello"}`},
		{"unicode and escapes", `{"text":"héllo\n\"wörld\" \u2028 🚰"}`},
		{"5 MiB", `{"text":"` + strings.Repeat("x", 5<<20) + `"}`},
	}
	c := mustDial(t, stdioHelperDialer(t, "echo"))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, _ := json.Marshal(i)
			mustWrite(t, c, `{"jsonrpc":"2.0","id":`+string(id)+`,"method":"echo","params":`+tt.params+`}`)
			r := decodeResponse(t, mustRead(t, c))
			if !bytes.Equal(r.ID, id) {
				t.Errorf("got id %s, want %s", r.ID, id)
			}
			var result struct{ Params json.RawMessage }
			if err := json.Unmarshal(r.Result, &result); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(result.Params, []byte(tt.params)) {
				t.Errorf("got params %.100s (%d bytes), want %.100s (%d bytes)", result.Params, len(result.Params), tt.params, len(tt.params))
			}
		})
	}
}

func TestStdioEnvDirStderr(t *testing.T) {
	stdioNoLeaks(t)
	dir := t.TempDir()
	var stderr bytes.Buffer
	d := stdioHelperDialer(t, "echo", "SLUICE_TEST_VAR=from-dialer")
	d.Dir, d.Stderr = dir, &stderr
	c := mustDial(t, d)
	mustWrite(t, c, `{"jsonrpc":"2.0","id":1,"method":"whoami"}`)
	var who struct{ Env, Dir string }
	if err := json.Unmarshal(decodeResponse(t, mustRead(t, c)).Result, &who); err != nil {
		t.Fatal(err)
	}
	if who.Env != "from-dialer" {
		t.Errorf("got SLUICE_TEST_VAR %q, want %q", who.Env, "from-dialer")
	}
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(who.Dir); got != want {
		t.Errorf("got dir %q, want %q", got, want)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close reaped the child, and Wait finished copying its stderr.
	if got := stderr.String(); got != "helper started\n" {
		t.Errorf("got stderr %q, want %q", got, "helper started\n")
	}
}

func TestStdioExitStatus(t *testing.T) {
	stdioNoLeaks(t)
	c := mustDial(t, stdioHelperDialer(t, "exit7"))
	if r := decodeResponse(t, mustRead(t, c)); r.Method != "bye" {
		t.Fatalf("got method %q, want %q", r.Method, "bye")
	}
	for range 2 { // the end is reported again, not just once
		_, err := c.Read(testContext(t))
		var exit *ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("got error %v, want an *ExitError", err)
		}
		if got := exit.State.ExitCode(); got != 7 {
			t.Errorf("got exit code %d, want 7", got)
		}
		if !strings.Contains(err.Error(), "exit status 7") {
			t.Errorf("got error %q, want it to contain %q", err, "exit status 7")
		}
	}
	if err := c.Write(testContext(t), []byte(`{"jsonrpc":"2.0","method":"late"}`)); err == nil {
		t.Error("Write to an exited child: got nil error, want one")
	}
}

func TestStdioClose(t *testing.T) {
	stdioNoLeaks(t)
	tests := []struct {
		mode       string
		wantSignal syscall.Signal // 0: exited by itself
	}{
		{"echo", 0},
		{"ignore-stdin", syscall.SIGTERM},
		{"ignore-term", syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			c := mustDial(t, stdioHelperDialer(t, tt.mode))
			if tt.mode != "echo" {
				// The child has set itself up to resist.
				if r := decodeResponse(t, mustRead(t, c)); r.Method != "ready" {
					t.Fatalf("got method %q, want %q", r.Method, "ready")
				}
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			state := c.(*stdioProcConn).cmd.ProcessState
			if state == nil {
				t.Fatal("Close returned before the child was reaped")
			}
			ws := state.Sys().(syscall.WaitStatus)
			var got syscall.Signal
			if ws.Signaled() {
				got = ws.Signal()
			}
			if got != tt.wantSignal {
				t.Errorf("got child ended by %v (%v), want signal %v", got, state, tt.wantSignal)
			}
			if _, err := c.Read(testContext(t)); !errors.Is(err, ErrClosed) {
				t.Errorf("Read after Close: got %v, want ErrClosed", err)
			}
			if err := c.Write(testContext(t), []byte(`{}`)); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close: got %v, want ErrClosed", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("second Close: got %v, want nil", err)
			}
		})
	}
}

// A grandchild that inherited stdout must not hide the child's exit.
func TestStdioGrandchildHoldsStdout(t *testing.T) {
	stdioNoLeaks(t)
	c := mustDial(t, stdioHelperDialer(t, "grandchild"))
	if r := decodeResponse(t, mustRead(t, c)); r.Method != "ready" {
		t.Fatalf("got method %q, want %q", r.Method, "ready")
	}
	_, err := c.Read(testContext(t))
	var exit *ExitError
	if !errors.As(err, &exit) || exit.State.ExitCode() != 5 {
		t.Fatalf("got error %v, want an *ExitError with exit status 5", err)
	}
	c.Close() // closes the grandchild's stdin too, so it exits
}

func TestStdioReadContext(t *testing.T) {
	stdioNoLeaks(t)
	c := mustDial(t, stdioHelperDialer(t, "echo"))
	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error)
	go func() {
		_, err := c.Read(ctx)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// A cancelled Read leaves the Conn usable.
	mustWrite(t, c, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`)
	if r := decodeResponse(t, mustRead(t, c)); string(r.ID) != "1" {
		t.Errorf("got id %s, want 1", r.ID)
	}
}

func TestStdioCloseUnblocksRead(t *testing.T) {
	stdioNoLeaks(t)
	c := mustDial(t, stdioHelperDialer(t, "echo"))
	errc := make(chan error)
	go func() {
		_, err := c.Read(context.Background())
		errc <- err
	}()
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

func TestStdioDialErrors(t *testing.T) {
	tests := []struct {
		name string
		d    *StdioDialer
		want string
	}{
		{"no command", &StdioDialer{}, "no command"},
		{"not found", &StdioDialer{Command: "sluice-no-such-command"}, "sluice-no-such-command"},
		{"bad dir", &StdioDialer{Command: "true", Dir: "/sluice/no/such/dir"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.d.Dial(context.Background())
			if err == nil {
				c.Close()
				t.Fatal("got nil error, want one")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := stdioHelperDialer(t, "echo").Dial(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a cancelled ctx: got %v, want context.Canceled", err)
	}
}

// stdioPipeConn returns a Conn reading from and writing to the returned
// pipe ends: write to in to feed Read, read from out to see Writes.
func stdioPipeConn(t *testing.T) (c Conn, in *io.PipeWriter, out *io.PipeReader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c = NewStdioConn(inR, outW, nil)
	t.Cleanup(func() {
		c.Close()
		inW.Close()
		outW.Close()
	})
	return c, inW, outR
}

func TestStdioConnFraming(t *testing.T) {
	stdioNoLeaks(t)
	tests := []struct {
		name    string
		limit   int64 // StdioOptions.MaxMessageBytes
		input   string
		want    []string
		wantErr error
	}{
		{"one per line", 0, "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"blank lines skipped", 0, "\n\n{\"a\":1}\n \t\n\r\n{\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"CRLF", 0, "{\"a\":1}\r\n{\"b\":2}\r\n", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"last line unterminated", 0, "{\"a\":1}\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"empty", 0, "", nil, io.EOF},
		{"16 MiB line", 0, `"` + strings.Repeat("y", DefaultMaxMessageBytes-2) + "\"\n", []string{`"` + strings.Repeat("y", DefaultMaxMessageBytes-2) + `"`}, io.EOF},
		{"too long", 0, "{}\n" + strings.Repeat("z", DefaultMaxMessageBytes+1) + "\n{}\n", []string{`{}`}, &TooLongError{What: "stdio message", Limit: DefaultMaxMessageBytes}},
		{"line at a set limit", 1000, `"` + strings.Repeat("y", 998) + "\"\r\n", []string{`"` + strings.Repeat("y", 998) + `"`}, io.EOF},
		{"past a set limit", 1000, "{}\n" + strings.Repeat("z", 1001) + "\r\n{}\n", []string{`{}`}, &TooLongError{What: "stdio message", Limit: 1000}},
		{"past a set limit, unterminated", 1000, strings.Repeat("z", 1001), nil, &TooLongError{What: "stdio message", Limit: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewStdioConn(strings.NewReader(tt.input), io.Discard, &StdioOptions{MaxMessageBytes: tt.limit})
			defer c.Close()
			var got []string
			var err error
			for {
				var msg []byte
				if msg, err = c.Read(context.Background()); err != nil {
					break
				}
				got = append(got, string(msg))
			}
			if tl, ok := tt.wantErr.(*TooLongError); ok {
				if got, ok := errors.AsType[*TooLongError](err); !ok || *got != *tl {
					t.Errorf("got error %v, want %v", err, tl)
				}
			} else if !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("message %d: got %.60q (%d bytes), want %.60q (%d bytes)", i, got[i], len(got[i]), tt.want[i], len(tt.want[i]))
				}
			}
		})
	}
}

func TestStdioConnWrite(t *testing.T) {
	stdioNoLeaks(t)
	c, _, out := stdioPipeConn(t)
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	mustWrite(t, c, `{"jsonrpc":"2.0","method":"x"}`)
	if got, want := <-lines, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"{", "", " ", "{\"a\":\"\xff\"}"} {
		var msgErr *MessageError
		if err := c.Write(context.Background(), []byte(bad)); !errors.As(err, &msgErr) {
			t.Errorf("Write(%q): got %v, want a message error", bad, err)
		}
	}
	// A refused message leaves the stream intact.
	mustWrite(t, c, `{"b":2}`)
	if got, want := <-lines, "{\"b\":2}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled ctx: got %v, want context.Canceled", err)
	}
	out.Close() // ends the reading goroutine
	for range lines {
	}
}

// Over an os.Pipe, whose ends have deadlines, a cancelled ctx stops a
// Write the peer is not reading, and the stream is then broken for good.
func TestStdioConnWriteCancel(t *testing.T) {
	stdioNoLeaks(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	c := NewStdioConn(strings.NewReader(""), pw, nil)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	big := `"` + strings.Repeat("w", 4<<20) + `"` // more than a pipe holds
	go func() { errc <- c.Write(ctx, []byte(big)) }()
	// The pipe fills up, so the Write is stuck until the cancel.
	if _, err := io.ReadFull(pr, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := c.Write(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("Write after a cut-short one: got %v, want a broken-stream error", err)
	}
}

func TestStdioConnReadContextAndClose(t *testing.T) {
	stdioNoLeaks(t)
	c, in, _ := stdioPipeConn(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	go in.Write([]byte("{\"a\":1}\n"))
	if got := mustRead(t, c); string(got) != `{"a":1}` {
		t.Errorf("got %s, want {\"a\":1}", got)
	}
	errc := make(chan error)
	go func() {
		_, err := c.Read(context.Background())
		errc <- err
	}()
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
	if err := c.Write(context.Background(), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: got %v, want ErrClosed", err)
	}
}

func FuzzStdioReadLine(f *testing.F) {
	for _, s := range []string{"{}\n", "\r\n\n{\"a\":1}\r\n", "x", "\n\n", "a\nb\r\nc"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var got [][]byte
		for {
			line, err := stdioReadLine(br, DefaultMaxMessageBytes)
			if err != nil {
				if err != io.EOF {
					t.Fatalf("got error %v, want io.EOF", err)
				}
				break
			}
			if bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("got line %q, want a non-blank line without a newline", line)
			}
			got = append(got, line)
		}
		// The same lines come from a plain split.
		var want [][]byte
		for l := range bytes.Lines(data) {
			l = bytes.TrimSuffix(bytes.TrimSuffix(l, []byte("\n")), []byte("\r"))
			if len(bytes.TrimSpace(l)) > 0 {
				want = append(want, l)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("got %d lines, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("line %d: got %q, want %q", i, got[i], want[i])
			}
		}
	})
}

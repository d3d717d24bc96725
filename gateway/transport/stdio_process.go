package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stdioStopGrace is how long a child gets to exit after its stdin is
// closed, and again after SIGTERM, before it is killed. It also bounds how
// long output is drained after the child exits, in case a grandchild keeps
// the pipe open.
const stdioStopGrace = 2 * time.Second

// errStdioStalled says why a child that was still running got stopped.
var errStdioStalled = errors.New("closed its stdout but kept running, so it was stopped")

// A StdioDialer starts an MCP server as a child process for each Dial and
// exchanges newline-delimited messages with it over the child's stdin and
// stdout. Command is required. A StdioDialer may be used by several
// goroutines at once; its fields must not change after the first Dial.
type StdioDialer struct {
	// Command is the program to run; a name without a slash is looked up
	// in PATH.
	Command string
	// Args are the arguments after the program name.
	Args []string
	// Env holds KEY=VALUE entries for the child, added to those it
	// inherits; an entry replaces an inherited one with the same key.
	Env []string
	// InheritEnv says which of the gateway's environment variables the
	// child inherits, by name. Nil means only those [InheritedByDefault]
	// accepts, as the official MCP SDKs' stdio clients do: the gateway's
	// own environment holds its secrets (admin token, Redis and OTLP
	// credentials, a cloud host's keys), which a stdio server, run to
	// serve agents, has no business reading.
	InheritEnv func(name string) bool
	// Dir is the child's working directory; empty means the gateway's.
	Dir string
	// Stderr receives the child's stderr, usually its log; nil discards
	// it. A Writer that is not an *os.File is fed from a goroutine, so it
	// must be safe to use from several children's goroutines at once.
	Stderr io.Writer
	// MaxMessageBytes bounds one line of the child's output: a longer
	// one ends the Conn's output with an *[ExitError] wrapping a
	// *[TooLongError], and the child is stopped. Zero means
	// [DefaultMaxMessageBytes].
	MaxMessageBytes int64
}

var _ Dialer = (*StdioDialer)(nil)

// Dial starts the child. ctx bounds only the start: the process lives
// until the Conn is closed or the child exits.
//
// Read on the returned Conn reports the end of the child's output with an
// *[ExitError], after every line the child wrote has been delivered. Close
// closes the child's stdin, which is how MCP asks a stdio server to exit,
// then sends SIGTERM after 2s and SIGKILL after 2s more, and returns once
// the process is reaped.
func (d *StdioDialer) Dial(ctx context.Context) (Conn, error) {
	if d.Command == "" {
		return nil, errors.New("transport: stdio upstream has no command")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("transport: start stdio upstream %q: %w", d.Command, err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, fmt.Errorf("transport: start stdio upstream %q: %w", d.Command, err)
	}
	cmd := exec.Command(d.Command, d.Args...)
	cmd.Env = append(inheritedEnv(os.Environ(), d.InheritEnv), d.Env...)
	cmd.Dir = d.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, d.Stderr
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = stdioStopGrace
	ownGroup(cmd)
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("transport: start stdio upstream %q: %w", d.Command, err)
	}
	c := &stdioProcConn{
		command: d.Command,
		cmd:     cmd,
		stdin:   stdin,
		stdout:  stdout,
		out:     newStdioWriter(stdin, fmt.Sprintf("transport: write to stdio upstream %q", d.Command)),
		exited:  make(chan struct{}),
		closed:  make(chan struct{}),
	}
	go c.wait()
	c.in = startStdioReader(stdioExitReader{stdout, c.exited}, maxMessage(d.MaxMessageBytes), c.closed, c.finish, nil)
	return c, nil
}

// An ExitError is what Read returns once a stdio upstream's output has
// ended: the child exited, or it stopped writing and was stopped.
type ExitError struct {
	// Command is the StdioDialer's Command.
	Command string
	// State tells how the process ended. State.ExitCode() is -1 if a
	// signal ended it.
	State *os.ProcessState
	// Err is why the output ended other than by the child exiting, or nil.
	Err error
}

func (e *ExitError) Error() string {
	pid, state := 0, "unknown status"
	if e.State != nil {
		pid, state = e.State.Pid(), e.State.String()
	}
	if e.Err != nil {
		return fmt.Sprintf("transport: stdio upstream %q (pid %d) %v; process exited: %s", e.Command, pid, e.Err, state)
	}
	return fmt.Sprintf("transport: stdio upstream %q (pid %d) exited: %s", e.Command, pid, state)
}

func (e *ExitError) Unwrap() error { return e.Err }

var _ Conn = (*stdioProcConn)(nil)

type stdioProcConn struct {
	command string
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	in      *stdioReader
	out     *stdioWriter
	exited  chan struct{} // closed once the process is reaped
	closed  chan struct{} // closed by Close

	closeOnce sync.Once
	stopOnce  sync.Once
	signalled bool // set by stop, read after stopOnce.Do returns
}

func (c *stdioProcConn) Read(ctx context.Context) ([]byte, error) {
	return c.in.read(ctx, c.closed)
}

func (c *stdioProcConn) Write(ctx context.Context, msg []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	err := c.out.write(ctx, msg)
	select {
	case <-c.closed:
		if err != nil {
			return ErrClosed
		}
	default:
	}
	return err
}

func (c *stdioProcConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.stopOnce.Do(c.stop)
		// The child is gone; closing our end frees a reader blocked by a
		// grandchild that inherited the pipe.
		c.stdout.Close()
		<-c.in.done
	})
	return nil
}

func (c *stdioProcConn) wait() {
	c.cmd.Wait()
	// Lines the child wrote before exiting are still worth reading, but a
	// grandchild that inherited stdout must not keep the Conn open.
	c.stdout.SetReadDeadline(time.Now().Add(stdioStopGrace))
	close(c.exited)
}

// finish runs when the child's output has ended. It makes sure the child
// is gone and tells why.
func (c *stdioProcConn) finish(err error) error {
	c.stopOnce.Do(c.stop)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, os.ErrClosed), errors.Is(err, ErrClosed):
		err = nil
		if c.signalled {
			err = errStdioStalled
		}
	default:
		err = fmt.Errorf("output unreadable: %w", err)
	}
	return &ExitError{Command: c.command, State: c.cmd.ProcessState, Err: err}
}

// stop ends the child the way the MCP stdio transport asks for: close its
// stdin, then SIGTERM, then SIGKILL. It returns once the child is reaped.
// The signals go to the child's process group (ownGroup): a launcher's
// server that ignored its stdin closing would outlive a launcher that
// dies of SIGTERM without passing it on.
//
// Whatever the child leaves in its group once it is reaped is stopped too
// (stopGroup): a launcher that exits when its stdin closes, or of its own
// accord, leaves its server running there.
func (c *stdioProcConn) stop() {
	defer stopGroup(c.cmd.Process.Pid, stdioStopGrace)
	c.stdin.Close()
	if c.awaitExit(stdioStopGrace) {
		return
	}
	c.signalled = true
	signalGroup(c.cmd.Process, syscall.SIGTERM)
	if c.awaitExit(stdioStopGrace) {
		return
	}
	signalGroup(c.cmd.Process, syscall.SIGKILL)
	<-c.exited
}

func (c *stdioProcConn) awaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// A stdioExitReader reads a child's stdout, giving every read a deadline
// once the child has exited: what is already in the pipe still arrives,
// but a grandchild that inherited the pipe cannot hold it open forever.
type stdioExitReader struct {
	f      *os.File
	exited <-chan struct{}
}

func (r stdioExitReader) Read(p []byte) (int, error) {
	select {
	case <-r.exited:
		r.f.SetReadDeadline(time.Now().Add(stdioStopGrace))
	default:
	}
	return r.f.Read(p)
}

package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Child is a helper process of the benchmark: an upstream or a proxy. The
// protocol is small: the child writes the address it listens on as the
// first line of its stdout once it accepts connections, and exits when its
// stdin reaches end of file (see WithParent). The parent closes stdin to
// stop it and kills it if it lingers.
type Child struct {
	// Name identifies the child in errors.
	Name string
	// Addr is the first line the child wrote, without the newline.
	Addr string

	cmd    *exec.Cmd
	stdin  io.Closer
	stderr *tail
	done   chan struct{} // closed when the process has been waited for
	err    error         // from Wait; read only after done is closed

	stopOnce sync.Once
	stopErr  error
}

// readyTimeout bounds how long a child may take to announce its address.
const readyTimeout = 15 * time.Second

// StartChild runs path with args and waits until it announces its address.
// If that fails the child is killed and the error holds the end of its
// stderr. On success the caller must call Stop. On Linux the child also
// gets SIGKILL if the parent dies without stopping it.
func StartChild(ctx context.Context, name, path string, args ...string) (*Child, error) {
	cmd := exec.Command(path, args...)
	setParentDeathSignal(cmd)
	first := &firstLine{c: make(chan string, 1)}
	c := &Child{Name: name, cmd: cmd, stderr: &tail{max: 8 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = first, c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	c.stdin = stdin
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()

	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case c.Addr = <-first.c:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v)%s", name, c.err, c.stderrTail())
	case <-timer.C:
		err = fmt.Errorf("%s did not announce an address within %v", name, readyTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.kill()
	return nil, fmt.Errorf("%w%s", err, c.stderrTail())
}

// PID returns the child's process ID.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Stop closes the child's stdin, waits up to grace for it to exit, then
// kills it. It returns an error if the child had to be killed or exited
// with a failure. Stop is idempotent and safe for concurrent use.
func (c *Child) Stop(grace time.Duration) error {
	c.stopOnce.Do(func() {
		c.stdin.Close()
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-c.done:
			if c.err != nil {
				c.stopErr = fmt.Errorf("%s: %w%s", c.Name, c.err, c.stderrTail())
			}
		case <-timer.C:
			c.kill()
			c.stopErr = fmt.Errorf("%s did not exit within %v of its stdin closing; killed", c.Name, grace)
		}
	})
	return c.stopErr
}

// kill ends the process and waits for it.
func (c *Child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

func (c *Child) stderrTail() string {
	s := strings.TrimSpace(c.stderr.String())
	if s == "" {
		return ""
	}
	return "; its stderr ends with:\n" + s
}

// WithParent returns a context that is cancelled when stdin reaches end of
// file, that is when the parent closes it or dies: the child side of the
// protocol. The goroutine reading stdin lives as long as the process, which
// is what a child wants.
func WithParent(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, cancel
}

// Announce writes addr as the child's first line of stdout.
func Announce(addr string) error {
	_, err := fmt.Fprintln(os.Stdout, addr)
	return err
}

// firstLine sends the first line written to it on c and discards the rest.
type firstLine struct {
	c    chan string
	buf  []byte
	sent bool
}

func (w *firstLine) Write(p []byte) (int, error) {
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.c <- strings.TrimSpace(string(w.buf[:i]))
		w.sent, w.buf = true, nil
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int

	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

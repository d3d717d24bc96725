// Package redistest starts a real redis-server for tests.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server a test started on a Unix socket.
type Server struct {
	// Socket is the path of the server's Unix socket.
	Socket string
	cmd    *exec.Cmd
	bin    string
	dir    string
}

// URL is the server's unix:// URL, which go-redis's ParseURL reads.
func (s *Server) URL() string { return "unix://" + s.Socket + "?db=0" }

// Stop kills the server; tests use it to see what an outage does. It is
// also done at the test's end.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Pause stops the server's process (SIGSTOP) without closing its
// connections: commands sent to it go unanswered until Resume, like a
// server stalled by a long command, a full disk or a network partition.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// ClientPause has the server hold every client's commands for d (CLIENT
// PAUSE ALL, a real Redis command: what a failover or a DEBUG SLEEP does):
// connections stay open and commands wait, then run once it ends, as if
// late. It returns when the pause ends; nothing, CLIENT UNPAUSE included,
// is answered before.
func (s *Server) ClientPause(t testing.TB, d time.Duration) (ends time.Time) {
	t.Helper()
	ends = time.Now().Add(d)
	if err := s.admin(fmt.Sprintf("CLIENT PAUSE %d ALL", d.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	return ends
}

// admin sends one inline command on a connection of its own and reads
// its status reply.
func (s *Server) admin(cmd string) error {
	c, err := net.DialTimeout("unix", s.Socket, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprint(c, cmd+"\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+OK") {
		return fmt.Errorf("%s: %s", cmd, strings.TrimSpace(line))
	}
	return nil
}

// Start runs redis-server without persistence on a Unix socket in a
// fresh directory until the test ends. A socket path, unlike a TCP port
// picked by opening and closing a listener, cannot be taken by another
// test in between. Without redis-server on PATH the test is skipped,
// except in CI (CI set), where .ci/run installs it and its absence fails.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed (.ci/run installs it): %v", err)
		}
		t.Skip("redis-server is not installed")
	}
	// Not t.TempDir: a socket path must fit in 104 bytes, and test names
	// make those long.
	dir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{Socket: filepath.Join(dir, "redis.sock"), bin: bin, dir: dir}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, "--port", "0", "--unixsocket", s.Socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	if err := waitPing(s.Socket, 10*time.Second); err != nil {
		return fmt.Errorf("redis-server on %s: %v", s.Socket, err)
	}
	return nil
}

// Restart starts the server again, empty, on the same socket after Stop:
// a Redis that was restarted (or failed over) while clients held its URL.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// waitPing waits until the server on the socket answers PING.
func waitPing(socket string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("unix", socket, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = fmt.Fprint(c, "PING\r\n")
			if err == nil {
				var line string
				line, err = bufio.NewReader(c).ReadString('\n')
				if err == nil && strings.HasPrefix(line, "+PONG") {
					c.Close()
					return nil
				}
			}
			c.Close()
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no answer to PING: %v", last)
}

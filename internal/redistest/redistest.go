// Package redistest starts a real redis-server for tests.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server a test started on loopback.
type Server struct {
	Addr string
	cmd  *exec.Cmd
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Stop kills the server; tests use it to see what an outage does. It is
// also done at the test's end.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
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

// Start runs redis-server without persistence on a free loopback port
// until the test ends. Without redis-server on PATH the test is skipped,
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
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", t.TempDir())
		s.cmd.Stdout, s.cmd.Stderr = nil, nil
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := waitPing(s.Addr, 10*time.Second); err != nil {
			s.Stop()
			if attempt < 3 { // the port was taken in between
				continue
			}
			t.Fatalf("redis-server on %s: %v", s.Addr, err)
		}
		t.Cleanup(s.Stop)
		return s
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPing waits until the server at addr answers PING.
func waitPing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
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

//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWrapClientGoneMidWrite: a desktop client that goes away (quits or
// crashes, closing its end of wrap's stdout) while wrap writes to it
// has wrap end as for any client gone: it stops the wrapped server
// (stdin closed, then SIGTERM to its process group) and exits. Before,
// the write to the broken stdout killed wrap with SIGPIPE (Go's default
// for fds 1 and 2), skipping all of that: a server that ignores its
// stdin closing (here sh waiting for its child) ran on.
func TestWrapClientGoneMidWrite(t *testing.T) {
	w := startOrphanWrap(t, "")
	cmd, stdin, stdout, exited, pid := w.cmd, w.stdin, w.stdout, w.exited, w.pid

	// wrap handles SIGPIPE; its server must not inherit it ignored.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err != nil || m&(1<<(syscall.SIGPIPE-1)) != 0 {
				t.Errorf("the wrapped server ignores SIGPIPE (SigIgn %s, %v): it inherited wrap's disposition", strings.TrimSpace(mask), err)
			}
		}
	}

	stdout.Close() // the client is gone
	io.WriteString(stdin, "not JSON\n")
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("wrap still runs 30s after its client went away")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("wrap was killed by %v, skipping its shutdown", ws.Signal())
	}
	for deadline := time.Now().Add(10 * time.Second); procRunning(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the wrapped server's child (pid %d) still runs after wrap exited", pid)
		}
	}
}

// procRunning reports whether process pid exists and is not a zombie.
func procRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// orphanWrap is `sluice wrap` over a shell whose child (sleep 600)
// ignores its stdin closing, which the shell waits for.
type orphanWrap struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	exited chan struct{} // closed once cmd is waited for
	pid    int           // the shell's child's
}

// startOrphanWrap starts an orphanWrap with a permissive config and
// cfgExtra, and waits for its server's child to start.
func startOrphanWrap(t *testing.T, cfgExtra string) *orphanWrap {
	t.Helper()
	bin := buildSluice(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\npolicy: {default: allow}\n"+cfgExtra), 0o600); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "server.pid")
	w := &orphanWrap{exited: make(chan struct{})}
	w.cmd = exec.Command(bin, "wrap", "--config", cfg, "--admin-listen", "off", "--log-level", "error", "--",
		"/bin/sh", "-c", "sleep 600 & echo $! > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; wait")
	// A file: a pipe would keep Wait waiting while the server's child
	// holds it.
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	w.cmd.Stderr = stderr
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if w.stdout, err = w.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.exited
	})
	for deadline := time.Now().Add(20 * time.Second); w.pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if w.pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
		} else if time.Now().After(deadline) {
			t.Fatal("the wrapped server did not start")
		}
	}
	t.Cleanup(func() { syscall.Kill(w.pid, syscall.SIGKILL) })
	return w
}

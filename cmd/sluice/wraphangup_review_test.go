package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWrapHangupStopsServer: a stdio server runs in a process group of its
// own (c166db8), so the SIGHUP a closed terminal or a dropped ssh session
// sends its foreground group reaches sluice alone, no longer the server
// too. sluice did not handle SIGHUP and died of it at once, skipping its
// shutdown: a server behind a launcher that ignores its stdin closing ran
// on as an orphan. A hangup is a shutdown like SIGTERM now.
func TestWrapHangupStopsServer(t *testing.T) {
	bin := buildSluice(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\nshutdown_timeout: 2s\npolicy: {default: allow}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "server.pid")
	cmd := exec.Command(bin, "wrap", "--config", cfg, "--admin-listen", "off", "--log-level", "error", "--",
		"/bin/sh", "-c", "sleep 600 & echo $! > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; wait")
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close() // kept open: wrap is not to end for its client going
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
		} else if time.Now().After(deadline) {
			t.Fatal("the wrapped server did not start")
		}
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("wrap still runs 30s after SIGHUP")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("wrap was killed by %v, skipping its shutdown", ws.Signal())
	}
	for deadline := time.Now().Add(10 * time.Second); procRunning(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the wrapped server's child (pid %d) still runs after wrap's hangup", pid)
		}
	}
}

//go:build linux

package main

import (
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
	w := startOrphanWrap(t, "shutdown_timeout: 2s\n") // its stdin kept open: wrap is not to end for its client going
	cmd, exited, pid := w.cmd, w.exited, w.pid

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

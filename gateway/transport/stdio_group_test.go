//go:build linux

package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestStdioCloseStopsProcessGroup: a server run through a launcher
// (npx, uvx, a shell script) that keeps running after its stdin closes
// is stopped with the launcher. Here the launcher is sh, waiting for
// its child (sleep, which never reads stdin): the SIGTERM that Close
// sends once stdin's closing is ignored ended sh alone, and the server
// ran on, an orphan, after the gateway or `sluice wrap` was gone.
func TestStdioCloseStopsProcessGroup(t *testing.T) {
	stdioNoLeaks(t)
	closeStopsChild(t, `sleep 600 & echo "{\"jsonrpc\":\"2.0\",\"method\":\"ready\",\"params\":{\"pid\":$!}}"; wait`)
}

// closeStopsChild runs script under /bin/sh as a stdio server; script
// prints {"params":{"pid":N}} naming a child it started, which must be
// gone (or a zombie) soon after the Conn's Close.
func closeStopsChild(t *testing.T, script string) {
	t.Helper()
	c := mustDial(t, &StdioDialer{Command: "/bin/sh", Args: []string{"-c", script}})
	var ready struct {
		Params struct{ PID int }
	}
	if err := json.Unmarshal(mustRead(t, c), &ready); err != nil || ready.Params.PID == 0 {
		t.Fatalf("the launcher's line: %v", err)
	}
	pid := ready.Params.PID
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The signal is sent before Close returns; the grandchild may take a
	// moment to die, and is then a zombie until its new parent reaps it.
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the launcher's child (pid %d) still runs after Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestStdioCloseStopsLauncherLeftovers: the launcher itself ends when
// its stdin closes (or of its own accord), but what it started, ignoring
// stdin, runs on in its group. The group got signals only while the
// launcher still ran, so a launcher that exited in time left its server
// an orphan, running after the gateway or `sluice wrap` was gone.
func TestStdioCloseStopsLauncherLeftovers(t *testing.T) {
	for name, script := range map[string]string{
		// sh reads its stdin to the end, then exits.
		"exits at stdin's end": `sleep 600 >/dev/null 2>&1 </dev/null & echo "{\"jsonrpc\":\"2.0\",\"method\":\"ready\",\"params\":{\"pid\":$!}}"; cat >/dev/null`,
		// sh exits at once: the Conn's output ends and the child is reaped.
		"exits of its own accord": `sleep 600 >/dev/null 2>&1 </dev/null & echo "{\"jsonrpc\":\"2.0\",\"method\":\"ready\",\"params\":{\"pid\":$!}}"`,
	} {
		t.Run(name, func(t *testing.T) {
			stdioNoLeaks(t)
			closeStopsChild(t, script)
		})
	}
}

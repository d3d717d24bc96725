package bench

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	return sh
}

func TestChildStartStop(t *testing.T) {
	// A child that announces, then exits when stdin closes.
	c, err := StartChild(t.Context(), "cat", shell(t), "-c", "echo 127.0.0.1:1234; echo more; exec cat >/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Addr, "127.0.0.1:1234"; got != want {
		t.Errorf("Addr = %q, want %q", got, want)
	}
	if err := c.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := c.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestChildExitsEarly(t *testing.T) {
	_, err := StartChild(t.Context(), "broken", shell(t), "-c", "echo 'listen: address in use' >&2; exit 3")
	if err == nil {
		t.Fatal("StartChild: got no error, want one")
	}
	for _, want := range []string{"broken exited", "exit status 3", "address in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestChildKilledAfterGrace(t *testing.T) {
	// sleep ignores stdin, so Stop has to kill it.
	c, err := StartChild(t.Context(), "sleeper", shell(t), "-c", "echo ready; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Stop(50 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop: got %v, want an error saying it was killed", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %v", d)
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 5}
	tl.Write([]byte("abc"))
	tl.Write([]byte("defg"))
	if got, want := tl.String(), "cdefg"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

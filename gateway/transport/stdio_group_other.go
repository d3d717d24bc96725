//go:build !unix

package transport

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// signalGroup sends sig to p.
func signalGroup(p *os.Process, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		p.Kill()
		return
	}
	p.Signal(sig)
}

// stopGroup does nothing where there are no process groups.
func stopGroup(int, time.Duration) {}

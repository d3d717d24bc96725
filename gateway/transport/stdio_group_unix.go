//go:build unix

package transport

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd's process the leader of a process group of its own,
// which whatever it starts joins unless it leaves it: a launcher's
// server (npx, uvx, a shell script) is then stopped with the launcher.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group p leads (see ownGroup), or
// to p alone if that fails.
func signalGroup(p *os.Process, sig syscall.Signal) {
	if syscall.Kill(-p.Pid, sig) != nil {
		p.Signal(sig)
	}
}

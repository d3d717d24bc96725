//go:build unix

package transport

import (
	"os"
	"os/exec"
	"syscall"
	"time"
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
	// kill(0) and kill(-1) would signal sluice's own group, or every
	// process it may signal.
	if p.Pid <= 1 || syscall.Kill(-p.Pid, sig) != nil {
		p.Signal(sig)
	}
}

// stopGroup ends what is left of the process group that pid, reaped,
// led: SIGTERM, then SIGKILL if any of it is still there after grace.
// While the group has a member its id is not given to a new process, so
// the signals cannot reach another group; an empty group's id is free
// again only once the kernel's process ids have gone round.
func stopGroup(pid int, grace time.Duration) {
	if pid <= 1 || syscall.Kill(-pid, syscall.SIGTERM) != nil {
		return // the group is empty
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if syscall.Kill(-pid, 0) != nil {
			return
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL)
}

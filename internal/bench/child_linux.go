package bench

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the child when the parent dies,
// so that a parent killed with SIGKILL leaves no stray children. (The
// signal fires when the thread that forked exits; the Go runtime does not
// retire threads that have no locked goroutine, and stdin closing is the
// second line of defence anyway.)
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package bench

import "os/exec"

// setParentDeathSignal does nothing outside Linux; children still exit
// when their stdin closes.
func setParentDeathSignal(*exec.Cmd) {}

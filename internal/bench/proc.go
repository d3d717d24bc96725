package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat. It is USER_HZ,
// which the Linux ABI fixes at 100 on every architecture Go supports, so
// the value is not read from sysconf.
const clockTick = time.Second / 100

// CPUTime returns the user plus system CPU time that process pid has used so
// far, with a resolution of 10ms. Linux only.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := parseStatCPU(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ticks) * clockTick, nil
}

// RSS returns the resident set size of process pid in bytes (VmRSS).
// Linux only.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	n, err := parseStatusRSS(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return n, nil
}

// parseStatCPU returns utime+stime in clock ticks from the contents of
// /proc/PID/stat. The command name in parentheses may itself hold spaces
// and parentheses, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	// Fields after the command name start at field 3 (state); utime and
	// stime are fields 14 and 15 in proc(5).
	f := bytes.Fields(b[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(f), stime+1)
	}
	u, err := strconv.ParseUint(string(f[utime]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseUint(string(f[stime]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// parseStatusRSS returns VmRSS in bytes from the contents of
// /proc/PID/status, where it is given in kB.
func parseStatusRSS(b []byte) (int64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("VmRSS: unexpected %q", bytes.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS line (a kernel thread or a zombie has none)")
}

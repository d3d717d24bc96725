package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// A gateway or wrap whose admin_listen picks its port (127.0.0.1:0) leaves
// the address it got in its data directory, admin.<pid>.addr, for the CLI
// (sluice approvals, inventory, …) to find; it removes the file on exit.

const adminAddrGlob = "admin.*.addr"

// publishAdminAddr writes addr to dir's admin.<pid>.addr and returns the
// function that removes it. Errors are only logged by the caller: the
// admin API works without the file.
func publishAdminAddr(dir, addr string) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	path := filepath.Join(dir, "admin."+strconv.Itoa(os.Getpid())+".addr")
	tmp := path + ".tmp"
	// The process's start time goes with it: a file left by a process
	// that died without removing it is not taken for a later process
	// that got the same pid (whose port may be anyone's by then).
	if err := os.WriteFile(tmp, []byte(addr+"\n"+processStart(os.Getpid())+"\n"), 0o600); err != nil {
		return func() {}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return func() {}, err
	}
	return func() { os.Remove(path) }, nil
}

// pickedPort reports whether listen asks the system for a port.
func pickedPort(listen string) bool {
	_, port, err := net.SplitHostPort(listen)
	return err == nil && port == "0"
}

// findAdminAddr returns the admin address a running gateway or wrap on
// data directory dir published, the most recent one whose process lives.
func findAdminAddr(dir string) (string, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, adminAddrGlob))
	type found struct {
		addr string
		mod  int64
	}
	var live []found
	for _, p := range paths {
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "admin."), ".addr"))
		if err != nil || !processAlive(pid) {
			continue
		}
		// Only a regular file of this user's (not a link, not another
		// account's in a shared data_dir), naming a loopback address: the
		// CLI sends the admin token there.
		b, fi, err := readOwnFile(p)
		if err != nil {
			continue
		}
		addr, start, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		host, _, err := net.SplitHostPort(addr)
		ip, perr := netip.ParseAddr(host)
		if err != nil || perr != nil || strings.TrimSpace(start) != processStart(pid) {
			continue
		}
		switch {
		case ip.IsUnspecified(): // admin_listen 0.0.0.0:0 or [::]:0: reach it on this host
			_, port, _ := net.SplitHostPort(addr)
			if ip.Is4() {
				addr = net.JoinHostPort("127.0.0.1", port)
			} else {
				addr = net.JoinHostPort("::1", port)
			}
		case !ip.IsLoopback():
			continue
		}
		live = append(live, found{addr, fi.ModTime().UnixNano()})
	}
	if len(live) == 0 {
		return "", fmt.Errorf("admin_listen picks its port, and no running gateway or wrap on data_dir %s has published it (%s): is one running with this config? else pass --admin with the address it logged", dir, adminAddrGlob)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].mod > live[j].mod })
	return live[0].addr, nil
}

// readOwnFile reads the regular file at p, not following a link, and
// returns it with what the open descriptor's Stat says (so a file swapped
// in after a check by path is not what is read); an error when it is not
// a regular file or not this user's.
func readOwnFile(p string) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || !ownFile(fi) {
		return nil, nil, fmt.Errorf("%s: not a regular file of this user's", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	return b, fi, err
}

// processAlive reports whether a process with pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// announceAdmin publishes addr in cfg's data directory and returns what
// removes it; a failure is logged, not fatal.
func announceAdmin(cfg *config, addr string, logger *slog.Logger) func() {
	dir, err := cfg.dataDirPath()
	if err == nil {
		var remove func()
		if remove, err = publishAdminAddr(dir, addr); err == nil {
			return remove
		}
	}
	logger.Warn("admin API address not published for the CLI: pass --admin to it", "addr", addr, "err", err)
	return func() {}
}

// processStart is when process pid started, in clock ticks since boot
// (/proc/pid/stat's field 22), or "" where there is no /proc.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 { // fields 3… after the name; the start time is the 20th of them
		return ""
	}
	return fields[19]
}

// ownFile reports whether fi is owned by the effective user (always true
// where ownership is not known).
func ownFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

// Package fulldisk gives tests a directory whose filesystem they can fill
// and free again, to see what code does when a write fails for want of
// space.
//
//	disk := fulldisk.New(t)
//	st := open(disk.Dir)
//	disk.Fill(t) // writes fail from now on
//	disk.Free(t) // and succeed again
//
// For a child process (a real `sluice serve`), Process limits that
// process's file size instead (prlimit(2)), leaving the test's own alone.
package fulldisk

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Disk is a directory on a filesystem that can be filled.
type Disk struct {
	// Dir is a directory (not yet created) on the filesystem.
	Dir        string
	fill, free func(t testing.TB)
}

// Fill makes writes under Dir fail: the filesystem is full.
func (d *Disk) Fill(t testing.TB) { t.Helper(); d.fill(t) }

// Free makes room again.
func (d *Disk) Free(t testing.TB) { t.Helper(); d.free(t) }

// New returns a directory on a 16 MiB tmpfs mounted for the test when
// it runs as root (and may mount), unmounted at the test's end; files
// under it must be closed by cleanups registered after New. Otherwise (or
// with SLUICE_TEST_RLIMIT set) it falls back to a file-size limit
// (RLIMIT_FSIZE) of the whole process, which Fill lowers to nothing and
// Free restores: tests using it must not run in parallel with others.
func New(t testing.TB) *Disk {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv("SLUICE_TEST_RLIMIT") == "" && os.Geteuid() == 0 {
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput()
		if err == nil {
			t.Cleanup(func() {
				if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
					t.Errorf("umount %s: %v: %s", dir, err, out)
					_ = exec.Command("umount", "-l", dir).Run()
				}
			})
			filler := filepath.Join(dir, "filler")
			return &Disk{Dir: filepath.Join(dir, "data"),
				fill: func(t testing.TB) {
					f, err := os.Create(filler)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					buf := make([]byte, 4096)
					for {
						if _, err := f.Write(buf); err != nil {
							if !errors.Is(err, syscall.ENOSPC) {
								t.Fatalf("filling the tmpfs: %v", err)
							}
							return
						}
					}
				},
				free: func(t testing.TB) {
					if err := os.Remove(filler); err != nil {
						t.Fatal(err)
					}
				}}
		}
		t.Logf("no tmpfs (%v: %s); using RLIMIT_FSIZE", err, out)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("no RLIMIT_FSIZE: %v", err)
	}
	set := func(t testing.TB, cur uint64) {
		lim := old
		lim.Cur = cur
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatalf("setrlimit: %v", err)
		}
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) })
	// The Go runtime ignores SIGXFSZ, so a write past the limit fails
	// with EFBIG instead of killing the process.
	return &Disk{Dir: filepath.Join(dir, "data"),
		fill: func(t testing.TB) { set(t, 0) },
		free: func(t testing.TB) { set(t, old.Cur) }}
}

// Process returns a Disk whose Fill and Free set the file-size limit
// (RLIMIT_FSIZE) of the running process pid: Fill to nothing, so that its
// every write to a file fails with EFBIG (which SQLite reports as a disk
// I/O error, SQLITE_IOERR_WRITE, where a full disk's ENOSPC is
// SQLITE_FULL), Free back to what it was. Dir is empty: the whole
// process's filesystem is full. Go programs ignore SIGXFSZ, so the
// process is not killed by the limit.
func Process(t testing.TB, pid int) *Disk {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Skipf("no prlimit(2) on process %d: %v", pid, err)
	}
	set := func(t testing.TB, cur uint64) {
		lim := old
		lim.Cur = cur
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
			t.Fatalf("prlimit %d: %v", pid, err)
		}
	}
	return &Disk{fill: func(t testing.TB) { set(t, 0) }, free: func(t testing.TB) { set(t, old.Cur) }}
}

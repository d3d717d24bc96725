//go:build unix

package h1

import (
	"net"
	"syscall"
)

// idleOpen reports whether an idle connection is still open with nothing
// to read: a peek that would block. A server that closed it (EOF) or sent
// something unasked makes it unfit for another request.
func idleOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && open
}

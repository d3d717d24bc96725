// Package deadpeer gives tests the address of a peer that is down.
//
// Closing a listener and using its address races with every other test
// that binds port 0: the kernel may hand the port to one of them in
// between. A deadpeer listener keeps its port for the whole test and
// resets every connection at once, so the address fails the way a
// stopped server does and no one else can take it.
//
//	addr := deadpeer.Addr(t) // "127.0.0.1:41234"; every dial there is reset
package deadpeer

import (
	"errors"
	"net"
	"testing"
)

// Addr returns the host:port of a loopback listener that accepts and
// immediately resets (RST) every connection until the test ends.
func Addr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // reset, not an orderly close
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

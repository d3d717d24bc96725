// Package deadpeer gives tests the address of a peer that is down.
//
// Closing a listener and using its address races with every other test
// that binds port 0: the kernel may hand the port to one of them in
// between. A deadpeer listener keeps its port for the whole test and
// resets every connection at once, so the address fails the way a
// stopped server does and no one else can take it.
//
//	addr := deadpeer.Addr(t) // "127.0.0.1:41234"; every dial there is reset
//
// Silent is the other way a peer fails: it accepts, then never answers.
//
//	addr := deadpeer.Silent(t) // connects, and every read waits for ever
package deadpeer

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// Addr returns the host:port of a loopback listener that accepts and
// immediately resets (RST) every connection until the test ends.
func Addr(t testing.TB) string {
	t.Helper()
	return listen(t, func(c net.Conn) {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // reset, not an orderly close
		}
		c.Close()
	}, nil)
}

// Silent returns the host:port of a loopback listener that accepts every
// connection and never answers nor closes it until the test ends: a peer
// that stalls (a server paused, a partition after the handshake), which
// only a timeout gets a caller past.
func Silent(t testing.TB) string {
	t.Helper()
	var mu sync.Mutex
	var held []net.Conn
	return listen(t, func(c net.Conn) {
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
}

// listen serves a loopback listener until the test ends, handing each
// connection to accepted; after the listener closes, cleanup (if set)
// runs.
func listen(t testing.TB, accepted func(net.Conn), cleanup func()) string {
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
			accepted(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		if cleanup != nil {
			cleanup()
		}
	})
	return ln.Addr().String()
}

package console

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// TestLoopbackAddressesDodgeThrottle: sign-in failures are counted per
// client address, but an agent on the gateway's host can connect from any
// of 127.0.0.0/8 (all of it is the loopback interface on Linux, no setup).
// Five guesses from each of 40 addresses are all checked against the
// token in the same minute; with 10001 addresses the failures map is even
// cleared and the count starts over. The throttle that "keeps a weak
// admin token from being guessed at speed" does not hold against the
// local agent the console's threat model is about.
func TestLoopbackAddressesDodgeThrottle(t *testing.T) {
	var checked atomic.Int32
	c, err := New(Deps{SignIn: func(_ context.Context, tok string) (Credential, bool) {
		checked.Add(1)
		return Credential{}, tok == "t0k"
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler()) // listens on 127.0.0.1
	defer srv.Close()
	throttled := 0
	for a := 2; a < 42; a++ {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}
		cl := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: src}).DialContext}}
		for i := range maxFailures {
			resp, err := cl.PostForm(srv.URL+"/console/login", url.Values{"name": {"agent"}, "token": {fmt.Sprintf("guess-%d-%d", a, i)}})
			if err != nil {
				t.Skipf("cannot connect from %s: %v", src, err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				throttled++
			}
		}
		cl.CloseIdleConnections()
	}
	if n := checked.Load(); n > maxFailures {
		t.Fatalf("one host (the agent's) had %d wrong tokens checked within a minute (%d answered 429); the throttle allows %d",
			n, throttled, maxFailures)
	}
}

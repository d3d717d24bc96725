package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/throttle"
)

// Review of 2c6fba4: once 10,000 addresses (one IPv6 /48 has 65,536 /64s)
// have each sent one wrong token this minute, every newcomer shares one
// slot, which the flood also fills. With a chosen admin_token, an
// operator signing in from an address that had not failed yet — loopback
// included — is then refused with the right token, for as long as the
// flood goes on. Before 2c6fba4 the flood cleared the table instead.
func TestFloodDoesNotLockOutLoopback(t *testing.T) {
	now := time.Unix(1e9, 0)
	c, err := New(Deps{Now: func() time.Time { return now }, SignIn: func(_ context.Context, tok string) (Credential, bool) {
		return Credential{}, tok == "t0k"
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	try := func(addr, tok string) int {
		req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"name": {"op"}, "token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for i := range throttle.MaxCounted + maxFailures {
		try(fmt.Sprintf("[2001:db8:%x:%x::1]:1", i>>16, i&0xffff), "guess")
	}
	if code := try("127.0.0.1:5555", "t0k"); code == http.StatusTooManyRequests {
		t.Errorf("operator on loopback with the right token, after a flood from one /48: %d (locked out by strangers' guesses)", code)
	}
}

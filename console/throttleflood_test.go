package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/throttle"
)

// A flood of fresh addresses (an IPv6 /48 holds 65,536 /64s) used to
// clear the throttle's table past 10,000 and start everyone's count
// over. Now, once the table is full of counts from this minute,
// newcomers share one slot: the flood gets five more guesses a minute in
// all, and the counts already there stay.
func TestThrottleFloodOfAddresses(t *testing.T) {
	var checked atomic.Int32
	now := time.Unix(1e9, 0)
	c, err := New(Deps{Now: func() time.Time { return now }, SignIn: func(_ context.Context, tok string) (Credential, bool) {
		checked.Add(1)
		return Credential{}, tok == "t0k"
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	try := func(addr string) int {
		req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"name": {"m"}, "token": {"guess"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	// One address spends its five guesses.
	for range maxFailures {
		try("[2001:db8:ffff::1]:1")
	}
	for i := range throttle.MaxCounted + 2000 {
		try(fmt.Sprintf("[2001:db8:%x:%x::1]:1", i>>16, i&0xffff))
	}
	if code := try("[2001:db8:ffff::1]:1"); code != http.StatusTooManyRequests {
		t.Errorf("the first address after the flood: %d, want 429 (its count was wiped)", code)
	}
	if n := checked.Load(); n > throttle.MaxCounted+maxFailures+maxFailures {
		t.Errorf("%d guesses checked; the flood past the table's %d should share %d", n, throttle.MaxCounted, maxFailures)
	}
}

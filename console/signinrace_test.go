package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSignInThrottleRace: five failed sign-ins a minute per
// address. The throttle is checked before SignIn runs and counted after
// it, so guesses sent at once all get through while the first are being
// checked (an admin JWT check can take a JWKS fetch).
func TestSignInThrottleRace(t *testing.T) {
	var checked atomic.Int32
	c, err := New(Deps{SignIn: func(ctx context.Context, tok string) (Credential, bool) {
		checked.Add(1)
		time.Sleep(50 * time.Millisecond) // a JWT verification / JWKS round trip
		return Credential{}, tok == "secret"
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler()) // 127.0.0.1:0
	defer srv.Close()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL+"/console/login", "application/x-www-form-urlencoded",
				strings.NewReader(url.Values{"name": {"mallory"}, "token": {"guess" + string(rune('A'+i%50))}}.Encode()))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := checked.Load(); n > maxFailures {
		t.Fatalf("%d guesses sent at once were checked against the token; the throttle allows %d a minute", n, maxFailures)
	}
}

package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestFailedSignInNameBounded: a failed sign-in is an audit event naming
// who tried, and anyone who reaches the admin listener can try, no token
// needed. The name typed went into the event whole, as long as the form
// (64 KiB): five a minute from each address (ten thousand addresses
// counted a minute) wrote what the sender chose to the audit store, 200
// times what a name needs. It is recorded bounded now, as the names in
// the gateway's events are (telemetry.BoundName).
func TestFailedSignInNameBounded(t *testing.T) {
	var mu sync.Mutex
	var evs []telemetry.Event
	c, err := New(Deps{
		SignIn: func(_ context.Context, tok string) (Credential, bool) { return Credential{}, tok == "t0k" },
		Record: func(e telemetry.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	name := strings.Repeat("m", 60<<10)
	resp, err := http.PostForm(srv.URL+"/console/login", url.Values{"name": {name}, "token": {"nope"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d, want 401", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 1 || evs[0].Type != "sluice.console_login" {
		t.Fatalf("events %+v, want one sluice.console_login", evs)
	}
	op, _ := evs[0].Attrs["operator"].(string)
	if len(op) > telemetry.MaxRecordedName || !strings.HasPrefix(op, "mmm") || !strings.Contains(op, telemetry.CutMark) {
		t.Errorf("the failed sign-in's event records a name of %d bytes, want it bounded to %d with the cut marked", len(op), telemetry.MaxRecordedName)
	}
}

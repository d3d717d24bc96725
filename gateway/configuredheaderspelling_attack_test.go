package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackConfiguredHeaderSpelling: a client header that CGI, WSGI and
// nginx's $http_ variables read as one the gateway sets for the upstream
// (upstreams[].headers) is not forwarded: X_api_key: attacker beside the
// gateway's X-Api-Key: real is HTTP_X_API_KEY to such an upstream too,
// which may take the client's. Nor is a hyphen spelling of a header
// configured with underscores. A closed upstream does not get one either,
// though pass_headers names it.
func TestAttackConfiguredHeaderSpelling(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	demoHandler := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
		}
		demoHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	opts := Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp",
		Headers: map[string]string{"X-Api-Key": "real", "X_Tenant": "acme"}}}}
	g, err := New(opts, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	h := modernHeaders("tools/call", "echo")
	h["X_api_key"] = "attacker"
	h["x_API-key"] = "attacker"
	h["X-Tenant"] = "evil"
	h["X_other"] = "kept"
	if status, _, body := post(t, gw.URL+"/mcp/demo", h, modernCall(1, "echo", `{"message":"hi"}`)); status != 200 || !strings.Contains(body, "Echo: hi") {
		t.Fatalf("got %d %s, want the echo", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("the call did not reach the upstream")
	}
	last := got[len(got)-1]
	want := map[string]string{"x_api_key": "real", "x_tenant": "acme", "x_other": "kept"}
	seen := map[string][]string{}
	for k, vv := range last {
		seen[cgiName(k)] = append(seen[cgiName(k)], vv...)
	}
	for n, v := range want {
		if vv := seen[n]; len(vv) != 1 || vv[0] != v {
			t.Errorf("upstream read %s as %q, want only %q (headers %v)", n, vv, v, last)
		}
	}

	rt := &route{passHeaders: map[string]bool{"X_api_key": true, "X-Other": true}, setHeaders: []string{"X-Api-Key"}}
	r := httptest.NewRequest(http.MethodGet, "/mcp/demo", nil)
	r.Header = http.Header{"X_api_key": {"attacker"}, "X-Other": {"kept"}}
	dst := http.Header{}
	closedHeaders(dst, r, rt, nil)
	if dst["X_api_key"] != nil || dst.Get("X-Other") != "kept" {
		t.Errorf("closed upstream got %v, want X-Other alone (and User-Agent)", dst)
	}
}

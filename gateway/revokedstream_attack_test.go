package gateway

import (
	"bufio"
	"context"
	"errors"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestHelperDemoStdio serves the demo server on stdin and stdout when run
// as a child process by a test; on its own it does nothing.
func TestHelperDemoStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_DEMO_STDIO") != "1" {
		return
	}
	s := server.NewStdioServer(demo.NewServer(demo.Options{}))
	s.SetErrorLogger(log.New(os.Stderr, "", 0))
	_ = s.Listen(context.Background(), os.Stdin, os.Stdout)
	os.Exit(0)
}

// revocable is the principal id of an API key that is revoked once
// revoked is set.
func revocable(id string) (p *intercept.Principal, revoked *atomic.Bool) {
	revoked = new(atomic.Bool)
	return &intercept.Principal{ID: id, Method: "api_key", Check: func() error {
		if revoked.Load() {
			return errors.New("the API key was revoked")
		}
		return nil
	}}, revoked
}

// servedAs serves g's handler to requests authenticated as who says (a
// principal with a credential check), refusing with 401 those whose
// credential no longer holds, as the auth middleware does. It is closed
// when the test ends.
func servedAs(t *testing.T, g *Gateway, who func(*http.Request) *intercept.Principal) *httptest.Server {
	t.Helper()
	h := g.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := who(r)
		if p.Check() != nil {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// as is servedAs's who for every request authenticated as p.
func as(p *intercept.Principal) func(*http.Request) *intercept.Principal {
	return func(*http.Request) *intercept.Principal { return p }
}

// TestAttackRevokedPrincipalStreamsOn: a call's SSE answer on /mcp went on
// streaming the upstream's messages — progress, the result — to a client
// whose credential was revoked while it streamed: the gateway asked about
// the credential when the POST came, never again. Now what the upstream
// sends is not passed on once the credential no longer holds: the stream
// ends with an error saying why, on an HTTP upstream (its event stream)
// and a stdio one (a bridged session, and a 2026-07-28 request on the
// shared connection), in both eras.
func TestAttackRevokedPrincipalStreamsOn(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "demo", URL: up.URL + "/mcp"},
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperDemoStdio$"}, Env: map[string]string{"SLUICE_TEST_DEMO_STDIO": "1"}},
	}}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice, revoked := revocable("alice")
	t.Cleanup(func() { g.Close() })
	gw := servedAs(t, g, as(alice))

	const count = `"name":"slow_count","arguments":{"n":40,"delay_ms":50}`
	for _, route := range []string{"demo", "stdio"} {
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(route+"/"+era, func(t *testing.T) {
				revoked.Store(false)
				url := gw.URL + "/mcp/" + route
				hdr := map[string]string{}
				body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + count + `,"_meta":{"progressToken":"p"}}}`
				if era == "2025-11-25" {
					hdr = openSession(t, url, "c", nil)
				} else {
					hdr = modernHeaders("tools/call", "slow_count")
					body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + count + `,"_meta":{"progressToken":"p",` + meta2026 + `}}}`
				}
				resp := openPost(t, t.Context(), url, hdr, body)
				sc := bufio.NewScanner(resp.Body)
				progress, after, ended := 0, 0, ""
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok {
						continue
					}
					if revoked.Load() {
						after++
					}
					if strings.Contains(data, "notifications/progress") {
						if progress++; progress == 3 {
							revoked.Store(true)
						}
						continue
					}
					ended = data
					break
				}
				if progress < 3 {
					t.Fatalf("the call's stream: %d progress notifications, then %q", progress, ended)
				}
				if strings.Contains(ended, "counted to") || !strings.Contains(ended, "revoked") || after > 4 {
					t.Errorf("after its credential was revoked the stream carried %d more messages and ended with %.200s; want it to end at once with an error saying why", after, ended)
				}
			})
		}
	}
}

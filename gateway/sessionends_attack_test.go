package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/redisstore"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackDeletedSessionOtherReplica: replicas A and B share session
// keys and a real redis-server (Options.Exchanges). A client uses its
// session through both, then ends it with a DELETE through A. The id,
// in an attacker's hands, must be refused (404) by B, which has the
// session in its table, by a replica C that never saw it, and by A: on a
// route (the demo upstream, mcp-go, serves a session id it was told to
// end) and on a virtual server (whose adopted session opens new inner
// sessions). Before, only A knew the id ended. A replica whose shared
// store does not answer refuses the session's requests with 503 and a
// JSON-RPC error, rather than serving a session that may have ended.
func TestAttackDeletedSessionOtherReplica(t *testing.T) {
	const echo = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"zombie"}}}`
	for _, tc := range []struct {
		name, path string
		virtual    []VirtualServer
	}{
		{"route", "/mcp/demo", nil},
		{"virtual server", "/mcp", []VirtualServer{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			store := sharedStore(t, srv)
			up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
			t.Cleanup(up.Close)
			replica := func(ex ExchangeStore) string {
				g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, VirtualServers: tc.virtual,
					SessionKeys: [][]byte{key(1)}, Exchanges: ex}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g.Handler())
				t.Cleanup(func() { closeServed(t, gw, g) })
				return gw.URL + tc.path
			}
			a, b, c := replica(store), replica(store), replica(store)

			hdr := openSession(t, a, "alice", nil)
			for _, u := range []string{a, b} {
				if status, _, body := post(t, u, hdr, echo); status != 200 || !strings.Contains(body, "Echo: zombie") {
					t.Fatalf("the session's call: %d %s", status, body)
				}
			}
			if st := deleteSession(t, a, hdr); st/100 != 2 {
				t.Fatalf("DELETE through A: %d", st)
			}
			for i, u := range []string{b, c, a} {
				if status, _, body := post(t, u, hdr, echo); status != http.StatusNotFound {
					t.Errorf("replica %c, the ended session's id: %d %s, want 404", "BCA"[i], status, body)
				}
			}

			// Fail closed: D's store stalls.
			live := openSession(t, a, "alice", nil)
			stalled := redis.NewClient(&redis.Options{Addr: stalledRedis(t), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { stalled.Close() })
			d := replica(redisstore.New(stalled, redisstore.Options{Timeout: 300 * time.Millisecond}))
			status, _, body := post(t, d, live, echo)
			if status != http.StatusServiceUnavailable || !strings.Contains(body, "could not check whether this session was ended") {
				t.Errorf("a session through a replica whose store stalls: %d %s, want 503 saying why", status, body)
			}
		})
	}
}

// noEnds is s without SessionEnds: a shared store that records no ended
// sessions, for tests of what the store guards past the session's
// lookup, which a stalled store would otherwise refuse first
// (TestAttackDeletedSessionOtherReplica).
func noEnds(s *redisstore.Store) ExchangeStore {
	return struct {
		ExchangeStore
		CallHolds
	}{s, s}
}

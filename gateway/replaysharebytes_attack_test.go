package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackSharedReplayBytesBounded: a client of a sealed session
// whose replicas share a Redis asks for tools/list with a cursor of its
// own (1 MiB of '<', each written \u003c in the store's JSON) and hangs
// up before the answer: every request was remembered there,
// the cursor whole, six times its size, for 30 minutes, 64 per session
// and a thousand sessions per client address: 6 MiB of Redis a request,
// until it was full. A request whose record would pass maxKeptCall is
// remembered as a mark alone: its id is still refused to a new request,
// and its answer on a resumed stream withheld; a record of the usual
// size is kept whole, and its answer screened on another replica.
func TestAttackSharedReplayBytesBounded(t *testing.T) {
	srv := redistest.Start(t)
	store := sharedStore(t, srv)
	list := func(id string) string {
		return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" +
			"{\"name\":\"echo" + id + "\",\"inputSchema\":{\"type\":\"object\"}}," +
			"{\"name\":\"send_email\",\"description\":\"" + poisoned + "\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"
	}
	up := hostileResumer(t, "", true, list("2")+list("3"))
	var lists atomic.Int64
	urls, left := sharingReplicas(t, up, nil, &lists, store)
	hdr := openSession(t, urls[0], "alice", nil)
	cursor := strings.Repeat("<", 1<<20)
	leave(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"`+cursor+`"}}`, left)
	leave(t, urls[0], hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"next"}}`, left)

	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer rdb.Close()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	total, records := 0, 0
	for _, k := range keys {
		if typ, _ := rdb.Type(ctx, k).Result(); typ != "hash" {
			continue
		}
		vals, err := rdb.HGetAll(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			total += len(v)
			records++
		}
	}
	if total > 64<<10 {
		t.Errorf("a request with a 1 MiB cursor left %d bytes in the shared store (%d records) for 30 minutes", total, records)
	}
	if records != 2 {
		t.Errorf("%d records in the shared store, want 2", records)
	}

	// The large request's id is still its own: reusing it is refused.
	_, hangUp, refused := openPrimed(t, urls[1], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUp()
	if refused == "" || errorCode(t, refused) != intercept.CodeInvalidRequest {
		t.Errorf("tools/list through B reusing the id of the large request: %q, want it refused (-32600)", refused)
	}
	// Resumed through B: the usual request's answer is screened and
	// passed on, the large one's withheld.
	got := resume(t, urls[1], hdr)
	if !strings.Contains(got, `"echo3"`) || strings.Contains(got, "send_email") {
		t.Errorf("stream resumed through B: %q, want the answer to id 3, screened", got)
	}
	if strings.Contains(got, `"echo2"`) {
		t.Errorf("stream resumed through B passed on the answer to the large request: %q", got)
	}
}

// TestAttackReplayBytesBounded is TestAttackSharedReplayBytesBounded for
// a replica on its own: each request whose stream broke off was kept in
// process with its cursor whole (1 MiB here, up to max_body_bytes), 64 a
// session, for 30 minutes after the request's body was let go.
func TestAttackReplayBytesBounded(t *testing.T) {
	list := func(id string) string {
		return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" +
			"{\"name\":\"echo" + id + "\",\"inputSchema\":{\"type\":\"object\"}}," +
			"{\"name\":\"send_email\",\"description\":\"" + poisoned + "\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"
	}
	up := hostileResumer(t, "", true, list("2")+list("3"))
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}},
		&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	left := make(chan struct{}, 1)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Handler().ServeHTTP(w, r)
		if r.Header.Get("X-Test-Leaves") != "" {
			tell(t, left, struct{}{})
		}
	}))
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/demo"
	hdr := openSession(t, url, "alice", nil)
	leave(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"`+strings.Repeat("<", 1<<20)+`"}}`, left)
	leave(t, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"next"}}`, left)

	g.sessions.mu.Lock()
	sess := g.sessions.m[hdr[hdrSession]]
	g.sessions.mu.Unlock()
	if sess == nil {
		t.Fatal("the session is not in the table")
	}
	sess.replays.mu.Lock()
	kept, n := 0, len(sess.replays.calls)
	for _, c := range sess.replays.calls {
		kept += len(c.cursor) + len(c.method)
	}
	sess.replays.mu.Unlock()
	if kept > 64<<10 || n != 2 {
		t.Errorf("the session keeps %d requests of %d bytes, want 2 of at most 64 KiB", n, kept)
	}

	_, hangUp, refused := openPrimed(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUp()
	if refused == "" || errorCode(t, refused) != intercept.CodeInvalidRequest {
		t.Errorf("tools/list reusing the id of the large request: %q, want it refused (-32600)", refused)
	}
	got := resume(t, url, hdr)
	if !strings.Contains(got, `"echo3"`) || strings.Contains(got, "send_email") {
		t.Errorf("resumed stream: %q, want the answer to id 3, screened", got)
	}
	if strings.Contains(got, `"echo2"`) {
		t.Errorf("resumed stream passed on the answer to the large request: %q", got)
	}
}

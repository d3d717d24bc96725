package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/gateway/redisstore"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/telemetry"
)

var _ ExchangeStore = (*redisstore.Store)(nil)

// sharedStore is a store in srv, a real redis-server, whose calls wait
// at most 300ms.
func sharedStore(t *testing.T, srv *redistest.Server) *redisstore.Store {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = 1
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return redisstore.New(c, redisstore.Options{Timeout: 300 * time.Millisecond})
}

// TestResumedAcrossReplicas: behind a load balancer that sends a
// session's POSTs to replica A and its GETs to replica B, a real go-sdk
// client of a real go-sdk server that closes each POST's stream before
// answering (SEP-1699) gets every answer on the stream it resumes
// through B, screened there as on A: the tools/list without send_email
// (hidden by policy, its description poisoned), recorded on B, the
// tools/call result scanned on B. The replicas share session keys and a
// real redis-server; without the store B withheld both answers, and the
// client waited forever.
func TestResumedAcrossReplicas(t *testing.T) {
	store := sharedStore(t, redistest.Start(t))
	up := resumingUpstream(t)
	var lists atomic.Int64
	results := make(chan jsontext.Value, 1)
	replica := func(ic *intercept.Interceptor) *Gateway {
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}, SessionKeys: [][]byte{key(1)}, Exchanges: store}, ic, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	var onA atomic.Int64 // the same config on every replica; A never sees the result
	a := replica(&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true,
		OnResult: func(*intercept.ActionDescriptor, jsontext.Value) { onA.Add(1) }})
	b := replica(&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true,
		Observer: observeFunc(func(string, jsontext.Value) { lists.Add(1) }),
		OnResult: func(_ *intercept.ActionDescriptor, r jsontext.Value) { tell(t, results, r) }})
	var gets atomic.Int64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
			b.Handler().ServeHTTP(w, r)
			return
		}
		a.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	checkResumedSession(t, lb.URL+"/mcp/demo", "resumed through B")
	if n := gets.Load(); n == 0 {
		t.Error("the client never resumed through B: the test proves nothing")
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("B recorded %d tools/list results, want 1", n)
	}
	select {
	case r := <-results:
		if !strings.Contains(string(r), "Echo: hi") {
			t.Errorf("B recorded tools/call result %s, want Echo: hi", r)
		}
	case <-time.After(10 * time.Second):
		t.Error("the tools/call result was never recorded on B")
	}
	if n := onA.Load(); n != 0 {
		t.Errorf("A recorded %d tools/call results, want 0 (it never saw one)", n)
	}
}

// TestAttackResumedAcrossReplicas: what a hostile upstream replays on a
// stream resumed through replica B, for a tools/list whose POST stream
// through A ended unanswered, is screened on B (send_email and its
// poisoned description withheld) and recorded there; the request is
// then forgotten everywhere, so the same list replayed again through A
// is a stray, withheld and counted.
func TestAttackResumedAcrossReplicas(t *testing.T) {
	store := sharedStore(t, redistest.Start(t))
	up := hostileResumer(t, "", false, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":["+
		"{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"+
		"{\"name\":\"send_email\",\"description\":\""+poisoned+"\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
	tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	urls, _ := sharingReplicas(t, up, tp.Metrics(), &lists, store)
	hdr := openSession(t, urls[0], "alice", nil)
	if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != 200 || strings.Contains(body, "send_email") {
		t.Fatalf("tools/list through A: %d %q", status, body)
	}
	got := resume(t, urls[1], hdr)
	if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
		t.Errorf("stream resumed through B passed on a list unscreened: %q", got)
	}
	if strings.Count(got, `"echo"`) != 1 || lists.Load() != 1 {
		t.Errorf("stream resumed through B: got %q (%d lists recorded), want the screened list once, recorded", got, lists.Load())
	}
	if got := resume(t, urls[0], hdr); strings.Contains(got, `"result"`) {
		t.Errorf("stream resumed again through A: got %q, want the answer screened once only", got)
	}
	if n := withheldCount(t, tp, "stray"); n != "1" {
		t.Errorf("sluice_messages_withheld_total{reason=\"stray\"}: %s, want 1", n)
	}
}

// TestReusedIDAcrossReplicas: a request whose id an open POST of the
// session waits on through replica A is refused through replica B
// (-32600), unsent: an upstream that routes answers by id would answer
// the one on the other's stream, screened as the other's. Once A's
// client left, unanswered, the id is still refused: the upstream may yet
// answer the call.
func TestReusedIDAcrossReplicas(t *testing.T) {
	store := sharedStore(t, redistest.Start(t))
	var sent atomic.Int64
	up := hostileResumer(t, "", true, "")
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(hdrSession) != "" {
			sent.Add(1)
		}
		up.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(counted.Close)
	var lists atomic.Int64
	urls, left := sharingReplicas(t, counted, nil, &lists, store)
	hdr := openSession(t, urls[0], "alice", nil)
	before := sent.Load()
	hangUp := openStream(t, urls[0], with(hdr, "X-Test-Leaves", "1"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	_, hangUpB, refused := openPrimed(t, urls[1], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUpB()
	if refused == "" {
		t.Fatal("tools/list through B reusing the id the call waits on through A: sent, want it refused")
	}
	if errorCode(t, refused) != intercept.CodeInvalidRequest || !strings.Contains(refused, "still waiting") {
		t.Errorf("tools/list through B reusing the id the call waits on through A: got %s, want -32600", refused)
	}
	if n := sent.Load() - before; n != 1 {
		t.Errorf("the upstream got %d requests, want 1 (the refused one unsent)", n)
	}
	hangUp()
	<-left
	// A's client left unanswered: the upstream may yet answer the call,
	// and its id stays the call's (TestAttackTakeOverBrokenList).
	_, hangUpB, refused = openPrimed(t, urls[1], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUpB()
	if errorCode(t, refused) != intercept.CodeInvalidRequest || !strings.Contains(refused, "give each request its own id") {
		t.Errorf("tools/list through B once A's client left the call unanswered: got %q, want it refused", refused)
	}
	_, hangUpB, refused = openPrimed(t, urls[1], hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	hangUpB()
	if refused != "" {
		t.Errorf("tools/list through B under an id of its own: %s, want it sent", refused)
	}
}

// TestSharedStoreDownFailsClosed: with the replicas' Redis stalled
// (SIGSTOP) or stopped, a result replayed on a stream resumed through
// the replica that did not serve the POST cannot be checked and is
// withheld (counted), and a POST whose id cannot be held is refused with
// an error saying so, unsent; neither waits longer than the store's
// timeout.
func TestSharedStoreDownFailsClosed(t *testing.T) {
	srv := redistest.Start(t)
	store := sharedStore(t, srv)
	up := hostileResumer(t, "", false, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"send_email\",\"description\":\""+poisoned+"\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
	tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	urls, _ := sharingReplicas(t, up, tp.Metrics(), &lists, noEnds(store))
	hdr := openSession(t, urls[0], "alice", nil)
	if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != 200 {
		t.Fatalf("tools/list through A: %d %q", status, body)
	}
	for i, outage := range []struct {
		name string
		stop func()
	}{
		{"stalled", func() {
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Resume() })
		}},
		{"stopped", func() { _ = srv.Resume(); srv.Stop() }},
	} {
		outage.stop()
		start := time.Now()
		if got := resume(t, urls[1], hdr); strings.Contains(got, `"result"`) {
			t.Errorf("%s: stream resumed through B: got %q, want the result withheld", outage.name, got)
		}
		if n := withheldCount(t, tp, "stray"); n != itoa(i+1) {
			t.Errorf("%s: sluice_messages_withheld_total{reason=\"stray\"}: %s, want %d", outage.name, n, i+1)
		}
		status, _, body := post(t, urls[1], hdr, `{"jsonrpc":"2.0","id":`+itoa(3+i)+`,"method":"tools/list"}`)
		if status != http.StatusServiceUnavailable || errorCode(t, body) != intercept.CodeInternalError || !strings.Contains(body, "could not check") {
			t.Errorf("%s: POST through B: got %d %s, want 503 saying the id could not be checked", outage.name, status, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the resumed stream and the POST took %v, want them bounded by the store's timeout", outage.name, d)
		}
	}
}

// TestSharedStoreStalledResumeBounded: a stream resumed through the
// replica that did not serve the POSTs, while the replicas' Redis is
// stalled (SIGSTOP), on which the upstream replays many results: each is
// withheld, and the stream ends within about one store timeout (300ms),
// not one per result. Before, each result asked the store in turn and
// waited out its timeout: 20 results held the stream 6 s, a replay of
// hundreds minutes.
func TestSharedStoreStalledResumeBounded(t *testing.T) {
	srv := redistest.Start(t)
	store := sharedStore(t, srv)
	const n = 20
	var replay strings.Builder
	for i := range n {
		fmt.Fprintf(&replay, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"tools\":[]}}\n\n", 10+i)
	}
	up := hostileResumer(t, "", false, replay.String())
	var lists atomic.Int64
	urls, _ := sharingReplicas(t, up, nil, &lists, store)
	hdr := openSession(t, urls[0], "alice", nil)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	start := time.Now()
	got := resume(t, urls[1], hdr)
	took := time.Since(start)
	if strings.Contains(got, `"result"`) {
		t.Errorf("stream resumed through B, Redis stalled: got %.300q, want every result withheld", got)
	}
	if took > 2*time.Second {
		t.Errorf("a resumed stream of %d results, Redis stalled, took %s; want about one store timeout (300ms)", n, took.Round(time.Millisecond))
	}
}

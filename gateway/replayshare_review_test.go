package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// scannedResult is a result OnResult got, with the call it was told the
// result answers.
type scannedResult struct {
	d      *intercept.ActionDescriptor
	result string
}

// scanningReplicas starts two gateways sharing session keys and store in
// front of up, hiding send_email, each with an OnResult that sends what
// it gets on its own channel.
func scanningReplicas(t *testing.T, up *httptest.Server, store ExchangeStore) (urls []string, results []chan scannedResult) {
	t.Helper()
	for range 2 {
		ch := make(chan scannedResult, 100)
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}, SessionKeys: [][]byte{key(1)}, Exchanges: store},
			&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true,
				OnResult: func(d *intercept.ActionDescriptor, r jsontext.Value) { ch <- scannedResult{d, string(r)} }},
			slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL+"/mcp/demo")
		results = append(results, ch)
	}
	return urls, results
}

// redisClient is a client of srv, for a test to look at what the store
// wrote.
func redisClient(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestResumedReadScannedAcrossReplicas: the result of a resources/read or
// prompts/get (what the model reads, scanned by classifier.scan_results
// like a tool's result) replayed on a stream resumed through replica B is
// handed to B's OnResult with the read's descriptor, as it would have
// been on A. Before, only a tools/call's descriptor was shared: a
// hostile upstream's injection in a read's result reached the client
// unscanned, no event recorded, whenever the stream resumed elsewhere.
func TestResumedReadScannedAcrossReplicas(t *testing.T) {
	for _, c := range []struct{ method, params, name string }{
		{"resources/read", `{"uri":"file:///notes.txt"}`, "resource:file:///notes.txt"},
		{"prompts/get", `{"name":"summary"}`, "prompt:summary"},
	} {
		t.Run(c.method, func(t *testing.T) {
			store := sharedStore(t, redistest.Start(t))
			up := hostileResumer(t, "", false, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"contents\":[{\"uri\":\"file:///notes.txt\",\"text\":\""+poisoned+"\"}]}}\n\n")
			urls, results := scanningReplicas(t, up, store)
			hdr := openSession(t, urls[0], "alice", nil)
			if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"`+c.method+`","params":`+c.params+`}`); status != 200 {
				t.Fatalf("%s through A: %d %q", c.method, status, body)
			}
			if got := resume(t, urls[1], hdr); !strings.Contains(got, `"result"`) {
				t.Fatalf("stream resumed through B: got %q, want the result", got)
			}
			select {
			case r := <-results[1]:
				if r.d.ToolName != c.name || !strings.Contains(r.result, "IGNORE PREVIOUS") {
					t.Errorf("B's OnResult: got %s for %s, want the read's result for %s", r.result, r.d.ToolName, c.name)
				}
			case <-time.After(2 * time.Second):
				t.Errorf("the %s result on the stream resumed through B never reached B's OnResult (classifier.scan_results)", c.method)
			}
		})
	}
}

// failingRemember is a store whose Remember fails while fail is set:
// one call that did not answer in time.
type failingRemember struct {
	ExchangeStore
	fail atomic.Bool
}

func (s *failingRemember) Remember(ctx context.Context, session string, calls map[string][]byte, max int, ttl time.Duration) (int, error) {
	if s.fail.Load() {
		return 0, context.DeadlineExceeded
	}
	return s.ExchangeStore.Remember(ctx, session, calls, max, ttl)
}

// TestAttackStaleLocalReplay: a shared session's request whose stream
// broke off while the store did not answer is not remembered by the
// replica in process, where no other replica can forget it. Before, A
// kept the ping (id 2) whose memory the store could not take; the
// client then sent a tools/list under id 2 through B, whose stream broke
// too, and resumed through A: A found its own stale ping first and passed
// the upstream's list as the ping's answer, send_email and its poisoned
// description unscreened.
func TestAttackStaleLocalReplay(t *testing.T) {
	store := &failingRemember{ExchangeStore: sharedStore(t, redistest.Start(t))}
	up := hostileResumer(t, "", false, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":["+
		"{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"+
		"{\"name\":\"send_email\",\"description\":\""+poisoned+"\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
	var lists atomic.Int64
	urls, _ := sharingReplicas(t, up, nil, &lists, store)
	hdr := openSession(t, urls[0], "alice", nil)
	store.fail.Store(true)
	if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != 200 {
		t.Fatalf("ping through A: %d %q", status, body)
	}
	store.fail.Store(false)
	if status, _, body := post(t, urls[1], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != 200 {
		t.Fatalf("tools/list reusing id 2 through B: %d %q", status, body)
	}
	got := resume(t, urls[0], hdr)
	if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
		t.Errorf("stream resumed through A passed on the list for id 2 screened as the earlier ping's answer: %q", got)
	}
}

// TestSharedCallKeepsNoArguments: what the store keeps of a call whose
// stream broke off is what screening its result needs, not the session
// id (the sealed id, a bearer of the session: the package says it is
// never written, but each call kept it twice), the call's arguments (a
// secret an agent passes a tool: audit keeps them only hashed, redacted)
// nor the tool's description and inputSchema (the upstream's, of any
// size: each small call to a tool with a 64 KiB schema wrote 64 KiB to
// Redis, 64 of them per session kept 30 minutes).
func TestSharedCallKeepsNoArguments(t *testing.T) {
	srv := redistest.Start(t)
	store := sharedStore(t, srv)
	schema := `{"type":"object","description":"` + strings.Repeat("s", 64<<10) + `"}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, done := upInitialize(w, r)
		switch {
		case done:
		case m == nil:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case m.Kind == intercept.KindNotification:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "tools/list":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[{"name":"echo","description":"Echoes","inputSchema":`+schema+`}]}}`)
		default: // a call: its stream ends unanswered
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: s_0\nretry: 1\ndata: \n\n")
		}
	}))
	t.Cleanup(up.Close)
	urls, _ := scanningReplicas(t, up, store)
	hdr := openSession(t, urls[0], "alice", nil)
	if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != 200 {
		t.Fatalf("tools/list: %d %.200q", status, body)
	}
	const calls = 8
	for i := range calls {
		if status, _, body := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":`+itoa(10+i)+`,"method":"tools/call","params":{"name":"echo","arguments":{"api_key":"sk-live-4242"}}}`); status != 200 {
			t.Fatalf("call: %d %.200q", status, body)
		}
	}
	c := redisClient(t, srv)
	ctx := t.Context()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	total, n := 0, 0
	for _, k := range keys {
		if c.Type(ctx, k).Val() != "hash" {
			continue
		}
		for _, v := range c.HVals(ctx, k).Val() {
			n++
			total += len(v)
			if strings.Contains(v, "sk-live-4242") || strings.Contains(v, hdr[hdrSession]) {
				t.Fatalf("the store keeps a call's arguments or the session id: %.300s", v)
			}
		}
	}
	if n != calls {
		t.Fatalf("the store keeps %d calls, want %d", n, calls)
	}
	if total > calls*2048 {
		t.Errorf("the store keeps %d bytes for %d calls, want at most 2 KiB each (not the tool's schema)", total, n)
	}
}

// countingHolds is a store that records the most ids one Hold was asked
// to hold.
type countingHolds struct {
	ExchangeStore
	most atomic.Int64
}

func (s *countingHolds) Hold(ctx context.Context, session, token string, ids []string, ttl time.Duration) (string, error) {
	for n := int64(len(ids)); ; {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	return s.ExchangeStore.Hold(ctx, session, token, ids, ttl)
}

// TestAttackBatchHoldsBounded: a batch POST of a shared session holds at
// most maxSharedIDs ids in the store; past that it is refused (-32600),
// unsent. Before, a 4 MiB batch of 100,000 pings was one Lua script of
// 100,000 keys (0.3 s during which Redis answered no replica, then again
// to release it, and every 40 s while open), even in a 2025-11-25
// session, whose batches are refused only after the ids are held.
func TestAttackBatchHoldsBounded(t *testing.T) {
	store := &countingHolds{ExchangeStore: sharedStore(t, redistest.Start(t))}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readAll(r.Body)
		switch {
		case strings.Contains(body, `"initialize"`):
			m, _ := intercept.DecodeMessage([]byte(body))
			version := "2025-11-25"
			if strings.Contains(body, "2025-03-26") {
				version = "2025-03-26"
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(hdrSession, "up-1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"`+version+`","capabilities":{},"serverInfo":{"name":"u","version":"1"}}}`)
		case r.Method != http.MethodPost || !strings.Contains(body, `"id"`):
			w.WriteHeader(http.StatusAccepted)
		default: // answered with no answers: the stream ends
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: s_0\nretry: 1\ndata: \n\n")
		}
	}))
	t.Cleanup(up.Close)
	var lists atomic.Int64
	urls, _ := sharingReplicas(t, up, nil, &lists, store)
	for _, version := range []string{"2025-11-25", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			store.most.Store(0)
			hdr := openSession(t, urls[0], "alice", nil)
			if version == "2025-03-26" {
				status, h, body := post(t, urls[0], map[string]string{"Mcp-Protocol-Version": version},
					`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`)
				if status != 200 || h.Get(hdrSession) == "" {
					t.Fatalf("initialize: %d %s", status, body)
				}
				hdr = map[string]string{"Mcp-Protocol-Version": version, hdrSession: h.Get(hdrSession)}
			}
			var batch []string
			for i := range 5000 {
				batch = append(batch, `{"jsonrpc":"2.0","id":`+itoa(i+10)+`,"method":"ping"}`)
			}
			status, _, body := post(t, urls[0], hdr, "["+strings.Join(batch, ",")+"]")
			if n := store.most.Load(); n > maxSharedIDs {
				t.Errorf("a batch of 5000 requests: the store was asked to hold %d ids at once, want at most %d", n, maxSharedIDs)
			}
			if status != http.StatusBadRequest || errorCode(t, body) != intercept.CodeInvalidRequest {
				t.Errorf("a batch of 5000 requests: got %d %.200s, want 400 -32600", status, body)
			}
			batch = batch[:maxSharedIDs]
			if status, _, body := post(t, urls[0], hdr, "["+strings.Join(batch, ",")+"]"); version == "2025-03-26" && status != 200 {
				t.Errorf("a batch of %d requests: got %d %.200s, want it sent", maxSharedIDs, status, body)
			}
		})
	}
}

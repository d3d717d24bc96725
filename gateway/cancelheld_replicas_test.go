package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/redisstore"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

var _ CallHolds = (*redisstore.Store)(nil)

// Issue 13: replicas share session_keys and Redis, so any replica serves
// any request of a 2025-era session. A call held for approval on replica
// A whose cancellation reaches replica B used to be passed upstream by B
// (the upstream never saw the call) while A held on; an operator who then
// approved the request had the abandoned call run upstream.

// heldReplicas are replicas of one gateway on one upstream, sharing
// session keys, each holding "add" for approval in its approvals store.
type heldReplicas struct {
	urls      []string
	approvals []*approval.Store
	up        string
	rec       *recorder
	// opts are every replica's, path the route or virtual server, add
	// the held tool's name there.
	opts      Options
	path, add string
}

// holdingReplicas starts two heldReplicas on exchanges, with approvals
// from approvals(i) for replica i, serving the route.
func holdingReplicas(t *testing.T, exchanges ExchangeStore, approvals func(i int) *approval.Store) *heldReplicas {
	return holdingReplicasWith(t, Options{}, exchanges, approvals)
}

// holdingReplicasWith is holdingReplicas with opts; with a virtual
// server, the call is held through it.
func holdingReplicasWith(t *testing.T, opts Options, exchanges ExchangeStore, approvals func(i int) *approval.Store) *heldReplicas {
	t.Helper()
	rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	h := &heldReplicas{rec: rec, up: up.URL + "/mcp", opts: opts, path: "/mcp/demo", add: "add"}
	if len(opts.VirtualServers) > 0 {
		h.path, h.add = "/mcp", "demo_add"
	}
	for i := range 2 {
		h.start(t, exchanges, approvals(i))
	}
	return h
}

// start starts one more replica, on exchanges and store, and returns its URL.
func (h *heldReplicas) start(t *testing.T, exchanges ExchangeStore, store *approval.Store) string {
	t.Helper()
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	opts := h.opts
	opts.Upstreams, opts.SessionKeys, opts.Exchanges, opts.Approver = []Upstream{{Name: "demo", URL: h.up}}, [][]byte{key(1)}, exchanges, store
	g, err := New(opts, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	h.urls, h.approvals = append(h.urls, gw.URL+h.path), append(h.approvals, store)
	return gw.URL + h.path
}

func (h *heldReplicas) upstreamSaw(s string) bool {
	return (&fixture{rec: h.rec}).upstreamSaw(s)
}

// redisApprovals opens an approvals store in srv for each replica: the
// replicas share their requests, as with approvals.redis_url.
func redisApprovals(t *testing.T, srv *redistest.Server) func(int) *approval.Store {
	return func(int) *approval.Store {
		s, err := approval.OpenRedisStore(t.Context(), redisClient(t, srv), "", approval.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// holdOnA opens a session whose client elicits through replica A and
// has A hold the add call; it returns the session's headers and A's
// stream, its approval question read.
func (h *heldReplicas) holdOnA(t *testing.T) (map[string]string, *transport.SSEReader, rpc) {
	t.Helper()
	hdr := initializeWith(t, h.urls[0], `{"elicitation":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	rd := transport.NewSSEReader(openPost(t, ctx, h.urls[0], hdr, strings.Replace(addCall, `"add"`, `"`+h.add+`"`, 1)).Body)
	q, _ := nextMessage(t, rd)
	if q.Method != "elicitation/create" {
		t.Fatalf("first event on A: got %+v, want the approval question", q)
	}
	return hdr, rd, q
}

// checkEndedUnanswered fails t unless rd, A's stream of the held call,
// carries the question withdrawn and ends without an answer.
func checkEndedUnanswered(t *testing.T, rd *transport.SSEReader, q rpc) {
	t.Helper()
	n, raw := nextMessage(t, rd)
	if n.Method != "notifications/cancelled" || !strings.Contains(raw, `"requestId":`+string(q.ID)) {
		t.Errorf("A's stream after the cancellation: got %s, want the question withdrawn", raw)
	}
	if ev, err := rd.Next(); err != io.EOF {
		t.Errorf("A's stream after the question was withdrawn: got %q (%v), want it to end without an answer", ev.Data, err)
	}
}

// TestAttackCancelledHeldCallOtherReplica: the call is held on A, its
// cancellation sent through B. B finds it held (one lookup in the
// session's shared store), withdraws the approval request and does not
// pass the cancellation on; A's hold ends without an answer, an
// operator's approval through either replica is refused, and nothing
// reaches the upstream. With approvals kept per replica (B cannot
// withdraw A's request), A still never runs the call: the operator's
// approval there finds the call cancelled in the shared store.
func TestAttackCancelledHeldCallOtherReplica(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"approvals in redis", Options{}},
		{"approvals in redis, virtual server", Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			h := holdingReplicasWith(t, tc.opts, sharedStore(t, srv), redisApprovals(t, srv))
			hdr, rd, q := h.holdOnA(t)
			status, _, body := post(t, h.urls[1], hdr, cancelAdd)
			if status != http.StatusAccepted {
				t.Fatalf("cancellation through B: got %d %s, want 202", status, body)
			}
			if h.upstreamSaw("notifications/cancelled") {
				t.Errorf("B passed on the cancellation of a call the upstream was never sent")
			}
			// An operator approves it (or tries to), through B's admin API.
			if rs := h.approvals[1].List(); len(rs) == 1 && rs[0].Status == approval.Pending {
				_, _ = h.approvals[1].Decide(rs[0].ID, true, "alice")
			}
			if h.path == "/mcp" {
				// Through a virtual server the stream ends as for a
				// cancellation through A (the question withdrawn under its
				// inner id, the call answered with an error): it carries
				// no result.
				for {
					ev, err := rd.Next()
					if err != nil {
						break
					}
					if strings.Contains(string(ev.Data), `"result"`) {
						t.Errorf("A's stream after the cancellation: got %s, want no result", ev.Data)
					}
				}
			} else {
				checkEndedUnanswered(t, rd, q)
			}
			if h.upstreamSaw(`"name":"add"`) {
				t.Fatalf("the call the client cancelled through B ran upstream after an operator approved it")
			}
			checkWithdrawn(t, h.approvals[0])
			if req := onlyRequest(t, h.approvals[0]); !strings.HasPrefix(req.DecidedBy, "mcp-cancel:") {
				t.Errorf("withdrawn by %q, want mcp-cancel:<agent>", req.DecidedBy)
			}
		})
	}
	t.Run("approvals per replica", func(t *testing.T) {
		srv := redistest.Start(t)
		h := holdingReplicas(t, sharedStore(t, srv), func(int) *approval.Store { return approval.NewStore(approval.Options{}) })
		hdr, rd, q := h.holdOnA(t)
		if status, _, body := post(t, h.urls[1], hdr, cancelAdd); status != http.StatusAccepted {
			t.Fatalf("cancellation through B: got %d %s, want 202", status, body)
		}
		if h.upstreamSaw("notifications/cancelled") {
			t.Errorf("B passed on the cancellation of a call the upstream was never sent")
		}
		// Only A's admin API knows the request.
		_, _ = h.approvals[0].Decide(onlyRequest(t, h.approvals[0]).ID, true, "alice")
		checkEndedUnanswered(t, rd, q)
		if h.upstreamSaw(`"name":"add"`) {
			t.Fatalf("the call the client cancelled through B ran upstream after an operator approved it on A")
		}
	})
}

// countingHeld counts the lookups of cancelled ids in the shared store.
type countingHeld struct {
	*redisstore.Store
	lookups, ids atomic.Int64
}

func (s *countingHeld) CancelCalls(ctx context.Context, session string, ids []string) ([]string, error) {
	s.lookups.Add(1)
	s.ids.Add(int64(len(ids)))
	return s.Store.CancelCalls(ctx, session, ids)
}

// TestCancelFloodSparesApprovals: cancellations through B of ids no
// replica holds cost one lookup each in the session's shared store and
// nothing in the approvals store (whose every operation takes a lock in
// Redis shared by all replicas): no command reaches its Redis. They are
// passed on, as before, and a call held meanwhile on A stays held.
func TestCancelFloodSparesApprovals(t *testing.T) {
	srv := redistest.Start(t)
	store := &countingHeld{Store: sharedStore(t, srv)}
	var approvalCmds atomic.Int64
	h := holdingReplicas(t, store, func(i int) *approval.Store {
		c := redisClient(t, srv)
		if i == 1 {
			c.AddHook(countHook{&approvalCmds})
		}
		s, err := approval.OpenRedisStore(t.Context(), c, "", approval.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	hdr, _, _ := h.holdOnA(t)
	approvalCmds.Store(0)
	const flood = 200
	for i := range flood {
		cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + itoa(1000+i) + `}}`
		if status, _, body := post(t, h.urls[1], hdr, cancel); status != http.StatusAccepted {
			t.Fatalf("cancellation %d through B: got %d %s, want 202", i, status, body)
		}
	}
	if n := approvalCmds.Load(); n != 0 {
		t.Errorf("%d cancellations of ids nobody holds sent %d commands to the approvals store, want 0", flood, n)
	}
	if n, ids := store.lookups.Load(), store.ids.Load(); n != flood || ids != flood {
		t.Errorf("%d cancellations: %d lookups of %d ids in the shared store, want one each", flood, n, ids)
	}
	if req := onlyRequest(t, h.approvals[0]); req.Status != approval.Pending {
		t.Errorf("the call held on A: %s, want still pending", req.Status)
	}
	h.rec.mu.Lock()
	passed := 0
	for _, p := range h.rec.posts {
		if strings.Contains(string(p), "notifications/cancelled") {
			passed++
		}
	}
	h.rec.mu.Unlock()
	if passed != flood {
		t.Errorf("the upstream got %d cancellations of calls it was sent, want %d (passed on as before)", passed, flood)
	}
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// stalledRedis is an address that accepts connections and never
// answers: a Redis that stalled.
func stalledRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// switchedHeld is a shared store whose held-call records fail while down.
type switchedHeld struct {
	*redisstore.Store
	down atomic.Bool
}

var errDown = errors.New("redis: i/o timeout")

func (s *switchedHeld) HoldCall(ctx context.Context, session, id, approval string, ttl time.Duration, renew bool) (bool, error) {
	if s.down.Load() {
		return false, errDown
	}
	return s.Store.HoldCall(ctx, session, id, approval, ttl, renew)
}

func (s *switchedHeld) ReleaseCall(ctx context.Context, session, id, approval string) (bool, error) {
	if s.down.Load() {
		return false, errDown
	}
	return s.Store.ReleaseCall(ctx, session, id, approval)
}

// TestCancelHeldOtherReplicaStoreDown: fail closed. A cancellation
// through B whose lookup the shared store does not answer (a stalled
// Redis) is refused with 503 and an error saying it was not taken, within
// the store's timeout, and not passed on; the call stays held on A. A
// held call whose record A cannot renew when an operator approves it is
// not run (A cannot tell it was not cancelled through another replica):
// it is answered with an error instead.
func TestCancelHeldOtherReplicaStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	shared := &switchedHeld{Store: sharedStore(t, srv)}
	h := holdingReplicas(t, shared, redisApprovals(t, srv))
	hdr, rd, _ := h.holdOnA(t)

	// B, on a Redis that stalled.
	stalled := redis.NewClient(&redis.Options{Addr: stalledRedis(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { stalled.Close() })
	b := h.start(t, noEnds(redisstore.New(stalled, redisstore.Options{Timeout: 300 * time.Millisecond})), h.approvals[1])
	start := time.Now()
	status, _, body := post(t, b, hdr, cancelAdd)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "not taken") {
		t.Errorf("cancellation through B, its Redis stalled: got %d %s, want 503 saying it was not taken", status, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refused cancellation took %v, want it bounded by the store's timeout", d)
	}
	if h.upstreamSaw("notifications/cancelled") {
		t.Errorf("a cancellation B could not check was passed on")
	}
	if req := onlyRequest(t, h.approvals[0]); req.Status != approval.Pending {
		t.Fatalf("the held call after a cancellation B could not check: %s, want pending", req.Status)
	}

	// A's Redis stalls too; an operator approves.
	shared.down.Store(true)
	if _, err := h.approvals[0].Decide(onlyRequest(t, h.approvals[0]).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	checkNotSent(t, rd, "the approved call A could not check")
	if h.upstreamSaw(`"name":"add"`) {
		t.Errorf("an approved call A could not check against cancellations through other replicas ran upstream")
	}

	// Another call to hold while A's Redis is still down: one that could
	// be cancelled through B unseen is not held.
	status, _, body = post(t, h.urls[0], hdr, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1}}}`)
	if status != http.StatusOK || !strings.Contains(body, "could not record") {
		t.Errorf("a call to hold, A's Redis down: got %d %s, want an error saying it could not be recorded", status, body)
	}
	for _, r := range h.approvals[0].List() {
		if r.Status == approval.Pending {
			t.Errorf("approval request %s of a call not held: pending, want it withdrawn", r.ID)
		}
	}
	if h.upstreamSaw(`"name":"add"`) {
		t.Errorf("a call A could not hold ran upstream")
	}
}

// TestCancelledHeldCallGoSDKOtherReplica: go-sdk's client, whose call's
// context ends while its user is asked, closes the call's request and
// sends notifications/cancelled; behind a load balancer that sends the
// cancellation to replica B while A holds the call, the request is
// withdrawn, the cancellation not passed on, and the call never runs.
// Before, B passed it on and the request stayed pending: an operator's
// approval let the same call, sent again, run without being asked.
func TestCancelledHeldCallGoSDKOtherReplica(t *testing.T) {
	srv := redistest.Start(t)
	h := holdingReplicas(t, sharedStore(t, srv), redisApprovals(t, srv))
	var toB atomic.Int64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := h.urls[0]
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			if strings.Contains(string(b), "notifications/cancelled") {
				toB.Add(1)
				to = h.urls[1]
			}
		}
		u, _ := url.Parse(to)
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}).ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	asked := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	callCtx, giveUp := context.WithCancel(ctx)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case asked <- struct{}{}:
			default:
			}
			select { // the user never answers; the agent gives up
			case <-ctx.Done():
			case <-callCtx.Done():
			}
			return nil, context.Canceled
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.URL + "/mcp/demo"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the call ended before its user was asked: %v", err)
	}
	giveUp()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the cancelled call did not return")
	}
	deadline := time.Now().Add(5 * time.Second)
	for onlyRequest(t, h.approvals[0]).Status == approval.Pending && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if toB.Load() == 0 {
		t.Fatal("the client sent no cancellation: the test proves nothing")
	}
	if rs := h.approvals[0].List(); len(rs) == 1 && rs[0].Status == approval.Pending {
		_, _ = h.approvals[0].Decide(rs[0].ID, true, "alice")
	}
	// Once A no longer holds it, the call ran or never will.
	deadline = time.Now().Add(5 * time.Second)
	for stacksContaining("gateway.(*Gateway).elicitApproval") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("A still holds the call 5s after it was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.upstreamSaw(`"name":"add"`) {
		t.Fatalf("the call the client cancelled through B ran upstream after an operator approved it")
	}
	if h.upstreamSaw("notifications/cancelled") {
		t.Errorf("B passed on the cancellation of a call the upstream was never sent")
	}
	checkWithdrawn(t, h.approvals[0])
}

// slowAdd holds the upstream's "add" calls until release is closed (or
// the call's request ends); started is closed when the first arrives.
type slowAdd struct {
	next             http.Handler
	started, release chan struct{}
	once             sync.Once
}

func (s *slowAdd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"name":"add"`)) {
			s.once.Do(func() { close(s.started) })
			select {
			case <-s.release:
			case <-r.Context().Done():
			}
		}
	}
	s.next.ServeHTTP(w, r)
}

// TestAttackCancelApprovedRunningCallOtherReplica: the call held on A is
// approved and sent upstream, where it runs; its client then cancels it
// through B. A kept its record in the shared store until the call's
// answer, so B found it "held", marked it, and swallowed the
// cancellation: the upstream ran the call to the end. Once A has sent the
// call its record is gone (checked and forgotten in one step), and B
// passes the cancellation on as for any call it does not hold.
func TestAttackCancelApprovedRunningCallOtherReplica(t *testing.T) {
	srv := redistest.Start(t)
	slow := &slowAdd{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}), started: make(chan struct{}), release: make(chan struct{})}
	rec := &recorder{next: slow}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	defer close(slow.release)
	h := &heldReplicas{rec: rec, up: up.URL + "/mcp", path: "/mcp/demo", add: "add"}
	exchanges, approvals := sharedStore(t, srv), redisApprovals(t, srv)
	for i := range 2 {
		h.start(t, exchanges, approvals(i))
	}
	hdr, _, q := h.holdOnA(t)
	if status, _, body := post(t, h.urls[0], hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"action":"accept","content":{"approve":true}}}`); status != http.StatusAccepted {
		t.Fatalf("approval through A: got %d %s, want 202", status, body)
	}
	select {
	case <-slow.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the approved call never reached the upstream")
	}
	if status, _, body := post(t, h.urls[1], hdr, cancelAdd); status != http.StatusAccepted {
		t.Fatalf("cancellation through B: got %d %s, want 202", status, body)
	}
	if !h.upstreamSaw("notifications/cancelled") {
		t.Errorf("the cancellation of the approved call running upstream, sent through B, never reached the upstream")
	}
}

// TestHeldCallRecordLostNotRun: fail closed. The record of the call held
// on A is lost from Redis (a restart, a failover to a replica that had
// not got it, an eviction); the client's cancellation through B finds
// nothing held, so it is passed on, and the upstream ignores it. When an
// operator then approves the call on A, A used to read the missing record
// as "not cancelled" and run the call; it cannot tell, so the call is not
// sent and the client is told so.
func TestHeldCallRecordLostNotRun(t *testing.T) {
	srv := redistest.Start(t)
	h := holdingReplicas(t, sharedStore(t, srv), func(int) *approval.Store { return approval.NewStore(approval.Options{}) })
	hdr, rd, _ := h.holdOnA(t)
	loseRecord(t, srv)
	if status, _, body := post(t, h.urls[1], hdr, cancelAdd); status != http.StatusAccepted {
		t.Fatalf("cancellation through B: got %d %s, want 202", status, body)
	}
	if _, err := h.approvals[0].Decide(onlyRequest(t, h.approvals[0]).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	checkNotSent(t, rd, "A's answer after its record was lost")
	if h.upstreamSaw(`"name":"add"`) {
		t.Errorf("a call whose cancellation through B may have gone unseen ran upstream")
	}
}

// TestHeldCallRecordLostRenewal: fail closed. The record of the call held
// on A is lost from Redis while it is held; A's next renewal used to
// write it again, hiding a cancellation through B that found nothing
// meanwhile, and an operator's approval after ran the call. Now the
// renewal writes nothing: the hold ends, the request is withdrawn and
// the call answered "not sent".
func TestHeldCallRecordLostRenewal(t *testing.T) {
	srv := redistest.Start(t)
	h := holdingReplicasWith(t, Options{holdRenew: 20 * time.Millisecond}, sharedStore(t, srv), func(int) *approval.Store { return approval.NewStore(approval.Options{}) })
	_, rd, _ := h.holdOnA(t)
	c, keys := loseRecord(t, srv)
	time.Sleep(200 * time.Millisecond) // several renewals
	if n := c.Exists(t.Context(), keys...).Val(); n != 0 {
		t.Fatalf("A's renewal wrote the lost record again")
	}
	checkNotSent(t, rd, "A's answer after its record was lost")
	if got := onlyRequest(t, h.approvals[0]).Status; got != approval.Withdrawn {
		t.Errorf("the request after the hold ended: %s, want withdrawn", got)
	}
	if h.upstreamSaw(`"name":"add"`) {
		t.Errorf("the call whose record was lost ran upstream")
	}
}

// checkNotSent fails t unless the held call 7's answer on rd, A's stream,
// is an error saying it was not sent; what names the case.
func checkNotSent(t *testing.T, rd *transport.SSEReader, what string) {
	t.Helper()
	for {
		m, raw := nextMessage(t, rd)
		if string(m.ID) != "7" {
			continue
		}
		if !strings.Contains(raw, `"error"`) || !strings.Contains(raw, "not sent") {
			t.Errorf("%s: got %s, want an error saying it was not sent", what, raw)
		}
		return
	}
}

// loseRecord deletes the record of held call 7 from srv, as a Redis
// restart, failover or eviction would, and returns the client and its key.
func loseRecord(t *testing.T, srv *redistest.Server) (*redis.Client, []string) {
	t.Helper()
	c := redisClient(t, srv)
	keys, err := c.Keys(t.Context(), "*a:7").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the held call's record: got %q %v, want one key", keys, err)
	}
	c.Del(t.Context(), keys...)
	return c, keys
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/throttle"
)

// This file bounds what clients can make the gateway hold: sessions (in
// all, per agent, per client address), stdio child processes per route,
// request body bytes being read or processed, and the upstream DELETEs
// sent when many sessions end at once.
//
// A client over its own share (per agent, per address) gets 429; one that
// finds the gateway itself full gets 503. Both carry Retry-After and a
// JSON-RPC error whose data names the config key of the limit.
//
// A client at its session limit is refused rather than having its least
// recently used session evicted: agent names are self-reported unless
// agent_header or authentication fixes them, so eviction would let anyone
// who knows an agent's name end that agent's live sessions, and a session
// ended under a working agent fails its next call in a way it cannot
// foresee. A refusal is visible and retryable, and sessions a client
// leaked end with the idle timeout.

// maxConcurrentEnds bounds the upstream DELETEs in flight when sessions
// end (idle reaping, shutdown), so ending thousands of sessions never
// sends thousands of requests at once.
const maxConcurrentEnds = 8

// Retry-After values: a session or child is freed when a client ends one
// (or by the idle timeout); body bytes when a request finishes.
const (
	retrySession = 10 * time.Second
	retryBody    = 1 * time.Second
)

// bodyWait is how long a request waits for body bytes to be freed before
// it is refused.
const bodyWait = 2 * time.Second

// limitError is a refusal because a configured limit is reached.
type limitError struct {
	key        string // the config key, e.g. max_sessions_per_agent
	max        int64
	status     int // 429: the client's own share is used; 503: the gateway's
	retryAfter time.Duration
	msg        string
}

func (e *limitError) Error() string { return e.msg }

// wire is the JSON-RPC error a client gets for e.
func (e *limitError) wire() *intercept.WireError {
	return &intercept.WireError{Code: intercept.CodeLimitExceeded, Message: e.msg,
		Data: map[string]any{"limit": e.key, "max": e.max, "retry_after_seconds": int(e.retryAfter / time.Second)}}
}

// writeLimitError answers an HTTP request refused by a limit.
func writeLimitError(w http.ResponseWriter, id jsontext.Value, e *limitError) {
	w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter/time.Second)))
	writeJSONRPCError(w, e.status, id, e.wire())
}

// asLimitError reports whether err is, or wraps, a refusal by a limit.
func asLimitError(err error) (*limitError, bool) {
	var le *limitError
	ok := errors.As(err, &le)
	return le, ok
}

// limitMetrics is what a telemetry.Metrics may also record about the
// gateway's limits; the gateway checks for it at run time.
type limitMetrics interface {
	// Sessions records how many downstream sessions of a transport
	// (streamable-http, sse, websocket) are open.
	Sessions(transport string, n int)
	// InflightBodyBytes records the request body bytes held now.
	InflightBodyBytes(n int64)
	// LimitRefused counts one request refused by the limit named by its
	// config key.
	LimitRefused(limit string)
}

// limits counts open sessions against max_sessions and the per-agent and
// per-address shares. Sessions in the table (Streamable HTTP) and
// connections (/ws, /sse) count alike. Safe for concurrent use.
type limits struct {
	maxSessions, perAgent, perClient int
	metrics                          limitMetrics // nil: none

	mu       sync.Mutex // guards the fields below
	total    int
	byKind   map[string]int
	byAgent  map[string]int
	byClient map[string]int
}

func newLimits(o *Options) *limits {
	l := &limits{maxSessions: o.maxSessions(), perAgent: o.maxSessionsPerAgent(), perClient: o.maxSessionsPerClient(),
		byKind: map[string]int{}, byAgent: map[string]int{}, byClient: map[string]int{}}
	l.metrics, _ = o.Metrics.(limitMetrics)
	return l
}

// lease is one admitted session's place in the counts, given back by
// release. A nil *lease is valid and holds nothing.
type lease struct {
	l            *limits
	kind, client string

	mu       sync.Mutex // guards the fields below
	agent    string     // "" until known
	released bool
}

// admit counts a new session of transport kind for agent (may be "" when
// not known yet: see bindAgent) from client address client, or refuses it.
func (l *limits) admit(kind, agent, client string) (*lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if client != "" && l.byClient[client] >= l.perClient {
		return nil, l.refuse(&limitError{key: "max_sessions_per_client", max: int64(l.perClient), status: http.StatusTooManyRequests, retryAfter: retrySession,
			msg: fmt.Sprintf("too many sessions from client address %s: max_sessions_per_client is %d; end a session (DELETE) or retry later", client, l.perClient)})
	}
	if err := l.agentFull(agent); err != nil {
		return nil, err
	}
	if l.total >= l.maxSessions {
		return nil, l.refuse(&limitError{key: "max_sessions", max: int64(l.maxSessions), status: http.StatusServiceUnavailable, retryAfter: retrySession,
			msg: fmt.Sprintf("the gateway holds its maximum of %d sessions (max_sessions); retry later", l.maxSessions)})
	}
	l.total++
	l.byKind[kind]++
	if client != "" {
		l.byClient[client]++
	}
	if agent != "" {
		l.byAgent[agent]++
	}
	l.record(kind)
	return &lease{l: l, kind: kind, client: client, agent: agent}, nil
}

// agentFull refuses a session for agent when it holds its share. Callers
// hold l.mu.
func (l *limits) agentFull(agent string) error {
	if agent == "" || l.byAgent[agent] < l.perAgent {
		return nil
	}
	return l.refuse(&limitError{key: "max_sessions_per_agent", max: int64(l.perAgent), status: http.StatusTooManyRequests, retryAfter: retrySession,
		msg: fmt.Sprintf("too many sessions for agent %q: max_sessions_per_agent is %d; end a session (DELETE) or retry later", agent, l.perAgent)})
}

func (l *limits) refuse(e *limitError) error {
	if l.metrics != nil {
		l.metrics.LimitRefused(e.key)
	}
	return e
}

// record reports the count of kind. Callers hold l.mu.
func (l *limits) record(kind string) {
	if l.metrics != nil {
		l.metrics.Sessions(kind, l.byKind[kind])
	}
}

// bindAgent counts the session against agent once its name is known (a
// connection learns it at initialize), or refuses it. A lease already
// bound keeps its agent.
func (s *lease) bindAgent(agent string) error {
	if s == nil || agent == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent != "" || s.released {
		return nil
	}
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.agentFull(agent); err != nil {
		return err
	}
	l.byAgent[agent]++
	s.agent = agent
	return nil
}

// release gives the session's place back; later calls do nothing.
func (s *lease) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	decr(l.byKind, s.kind)
	decr(l.byClient, s.client)
	decr(l.byAgent, s.agent)
	l.record(s.kind)
}

// decr counts one fewer for k, forgetting k at zero so that many names
// or addresses over time do not grow the maps.
func decr(m map[string]int, k string) {
	if k == "" {
		return
	}
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// takeLease hands the place admitted for x's initialize to the session it
// opens, or, for an upstream that opened a session on another request,
// admits one now.
func (g *Gateway) takeLease(x *exchange) (*lease, error) {
	if l := x.lease; l != nil {
		x.lease = nil
		return l, nil
	}
	return g.limits.admit(string(TransportStreamableHTTP), x.agent, x.client)
}

// clientAddr is the address a request's sessions, bodies and
// unauthenticated calls are counted under: the peer's IP (the HTTP
// server's RemoteAddr), or for IPv6 its /64, since one host commonly
// holds a whole /64; behind a proxy of Options.TrustedProxies, the
// client its X-Forwarded-For names (throttle.Behind). Handler's
// withClientAddr works it out once per request.
func clientAddr(r *http.Request) string {
	if a := intercept.ClientAddrFrom(r.Context()); a != "" {
		return a
	}
	return throttle.Client(r.RemoteAddr)
}

// childSlots bounds the stdio child processes a route's sessions run: at
// most max in all, and at most half of them (one at least) for one agent,
// so that one agent holding sessions open cannot leave the others none,
// as max_sessions_per_agent keeps it from filling the session table. A
// nil *childSlots bounds nothing.
type childSlots struct {
	route   string
	max     int
	metrics limitMetrics // nil: none

	mu      sync.Mutex // guards n and byAgent
	n       int
	byAgent map[string]int // children held per agent (not the unnamed)
}

// agentShare is the most children of a route one agent may hold.
func (c *childSlots) agentShare() int { return max(1, c.max/2) }

// childSlot is one place taken in a childSlots; release gives it back
// once. A nil *childSlot holds nothing.
type childSlot struct {
	c     *childSlots
	agent string
	once  sync.Once
}

// take takes a place for a session of agent ("" when the agent is not
// known yet: a /ws or /sse connection without authentication or agent
// header, counted in all only).
func (c *childSlots) take(agent string) (*childSlot, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		if c.metrics != nil {
			c.metrics.LimitRefused("max_children")
		}
		return nil, &limitError{key: "max_children", max: int64(c.max), status: http.StatusServiceUnavailable, retryAfter: retrySession,
			msg: fmt.Sprintf("upstream %q runs its maximum of %d stdio processes, one per session or principal (upstreams[].max_children); end a session or retry later", c.route, c.max)}
	}
	if agent != "" && c.byAgent[agent] >= c.agentShare() {
		if c.metrics != nil {
			c.metrics.LimitRefused("max_children")
		}
		return nil, &limitError{key: "max_children", max: int64(c.agentShare()), status: http.StatusTooManyRequests, retryAfter: retrySession,
			msg: fmt.Sprintf("agent %q runs %d of upstream %q's stdio processes, one per session and one for its requests without a session, half of its maximum (upstreams[].max_children %d); end a session or retry later", agent, c.agentShare(), c.route, c.max)}
	}
	c.n++
	if agent != "" {
		if c.byAgent == nil {
			c.byAgent = make(map[string]int)
		}
		c.byAgent[agent]++
	}
	return &childSlot{c: c, agent: agent}, nil
}

// shareFull reports whether agent holds its share of the children.
func (c *childSlots) shareFull(agent string) bool {
	if c == nil || agent == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byAgent[agent] >= c.agentShare()
}

func (s *childSlot) release() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.c.mu.Lock()
		s.c.n--
		if s.agent != "" {
			if s.c.byAgent[s.agent]--; s.c.byAgent[s.agent] <= 0 {
				delete(s.c.byAgent, s.agent)
			}
		}
		s.c.mu.Unlock()
	})
}

// slotConn gives its child's place back when closed.
type slotConn struct {
	transport.Conn
	slot *childSlot
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.slot.release()
	return err
}

// takeChild takes a place among rt's stdio children for agent; when every
// place is taken, the principals' 2026-07-28 child unused longest, if any,
// ends to make room (statelessPool.evictIdle); when agent's share is
// taken, only its own 2026-07-28 child, if idle, does
// (statelessPool.evictIdleOf).
func (rt *route) takeChild(agent string) (*childSlot, error) {
	slot, err := rt.children.take(agent)
	le, ok := asLimitError(err)
	switch {
	case !ok:
		return slot, err
	case le.status == http.StatusTooManyRequests || rt.children.shareFull(agent):
		// Another principal's child ending would make no room: only
		// agent's own frees a place of its share.
		if rt.stateless.evictIdleOf(agent) {
			return rt.children.take(agent)
		}
	case rt.stateless.evictIdle():
		return rt.children.take(agent)
	}
	return slot, err
}

// dialSession dials the upstream for one session (not the shared
// 2026-07-28 connection), within the route's bound on stdio children. A
// slot already taken for the session is used, else one is taken here;
// either way the returned Conn gives it back when closed. agent is the
// session's, for its share of the children.
func (rt *route) dialSession(ctx context.Context, slot *childSlot, agent string) (transport.Conn, error) {
	if rt.children == nil {
		return rt.dialer.Dial(ctx)
	}
	if slot == nil {
		var err error
		if slot, err = rt.takeChild(agent); err != nil {
			return nil, err
		}
	}
	up, err := rt.dialer.Dial(ctx)
	if err != nil {
		slot.release()
		return nil, err
	}
	return &slotConn{Conn: up, slot: slot}, nil
}

// admission is what a /ws or /sse connection was admitted with, passed to
// serveConn in its context.
type admission struct {
	lease *lease
	slot  *childSlot // nil: not a stdio route, or not taken yet
}

type admissionKey struct{}

func (a *admission) release() {
	if a != nil {
		a.lease.release()
		a.slot.release()
	}
}

// admitConn counts a new /ws or /sse connection before it is accepted and
// takes its stdio child's place, or answers the request with the refusal.
func (g *Gateway) admitConn(w http.ResponseWriter, r *http.Request, rt *route, kind Transport) (*admission, bool) {
	l, ok := g.admitConnLease(w, r, kind)
	if !ok {
		return nil, false
	}
	slot, err := rt.takeChild(g.connAgent(r))
	if err != nil {
		l.release()
		le, _ := asLimitError(err)
		writeLimitError(w, nil, le)
		return nil, false
	}
	return &admission{lease: l, slot: slot}, true
}

// admitConnLease counts a new connection against the limits of its kind,
// its agent (the principal, else the agent header) and its address;
// refused, it answers w.
func (g *Gateway) admitConnLease(w http.ResponseWriter, r *http.Request, kind Transport) (*lease, bool) {
	l, err := g.limits.admit(string(kind), g.connAgent(r), clientAddr(r))
	if err != nil {
		le, _ := asLimitError(err)
		writeLimitError(w, nil, le)
		return nil, false
	}
	return l, true
}

// connAgent is the agent of a /ws or /sse connection as its opening
// request names it: the principal, else the agent header; "" when
// neither does (its initialize will).
func (g *Gateway) connAgent(r *http.Request) string {
	agent := ""
	if h := g.opts.AgentHeader; h != "" {
		agent = r.Header.Get(h)
	}
	if a, ok := principalAgent(r.Context()); ok {
		agent = a
	}
	return agent
}

// admitAgent counts the connection against its agent (fixed by its first
// request: identity.go) when its initialize request arrives. Refused, the
// client gets the error in answer and the connection ends.
func (r *relay) admitAgent(ctx context.Context, m *intercept.Message) error {
	if r.lease == nil || m.Kind != intercept.KindRequest || m.Method != "initialize" {
		return nil
	}
	r.mu.Lock()
	agent := r.owner.agent
	r.mu.Unlock()
	err := r.lease(agent)
	if le, ok := asLimitError(err); ok {
		_ = r.toClient(ctx, intercept.ErrorResponse(m.ID, le.wire()))
	}
	return err
}

// byteBudget bounds the request body bytes held across the gateway, and
// those one client holds (by key: its principal, else its address; see
// Gateway.bodyKey) to share, half of it: one client sending large calls to
// a tool that takes its time must not leave the others no room at all.
// The key "" has no share. Waiters are not served in order: a small body
// may pass a large one.
type byteBudget struct {
	max     int64
	share   int64
	metrics limitMetrics // nil: none

	mu    sync.Mutex // guards the fields below
	held  int64
	byKey map[string]int64
	peak  int64         // the most ever held, for tests
	freed chan struct{} // closed, and replaced, when bytes are given back while waiting > 0
	// waiting counts the acquires waiting on freed: with none, a release
	// (every request's) makes no new channel.
	waiting int
}

// newByteBudget returns a budget of max bytes, of which one key holds at
// most share.
func newByteBudget(max, share int64, m limitMetrics) *byteBudget {
	return &byteBudget{max: max, share: min(share, max), metrics: m, byKey: map[string]int64{}, freed: make(chan struct{})}
}

// acquireWithin is acquire waiting at most d; a budget with room is
// taken without making a timer.
func (b *byteBudget) acquireWithin(ctx context.Context, key string, n int64, d time.Duration) error {
	if b.tryAcquire(key, n) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return b.acquire(ctx, key, n)
}

// fits reports whether key may take n more bytes. Callers hold b.mu.
func (b *byteBudget) fits(key string, n int64) bool {
	return b.held+n <= b.max && (key == "" || b.byKey[key]+n <= b.share)
}

// take records n bytes taken by key. Callers hold b.mu.
func (b *byteBudget) take(key string, n int64) {
	b.held += n
	if key != "" {
		b.byKey[key] += n
	}
	b.peak = max(b.peak, b.held)
	b.report()
}

// tryAcquire takes n bytes for key if they are free now.
func (b *byteBudget) tryAcquire(key string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fits(key, n) {
		return false
	}
	b.take(key, n)
	return true
}

// acquire takes n bytes for key, waiting until they are free or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, key string, n int64) error {
	for {
		b.mu.Lock()
		if b.fits(key, n) {
			b.take(key, n)
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.waiting++
		b.mu.Unlock()
		var err error
		select {
		case <-freed:
		case <-ctx.Done():
			err = ctx.Err()
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (b *byteBudget) release(key string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	if key != "" {
		if b.byKey[key] -= n; b.byKey[key] <= 0 {
			delete(b.byKey, key)
		}
	}
	b.report()
	if b.waiting > 0 {
		close(b.freed)
		b.freed = make(chan struct{})
	}
	b.mu.Unlock()
}

// report records the bytes held. Callers hold b.mu.
func (b *byteBudget) report() {
	if b.metrics != nil {
		b.metrics.InflightBodyBytes(b.held)
	}
}

func (b *byteBudget) full() *limitError {
	if b.metrics != nil {
		b.metrics.LimitRefused("max_inflight_body_bytes")
	}
	return &limitError{key: "max_inflight_body_bytes", max: b.max, status: http.StatusServiceUnavailable, retryAfter: retryBody,
		msg: fmt.Sprintf("the gateway holds its maximum of %d bytes of request bodies (max_inflight_body_bytes); retry shortly", b.max)}
}

// budgetStep is how much an unknown-length (chunked) body reserves at a
// time as it is read.
const budgetStep = 64 << 10

// limitBodies is middleware bounding the bytes of the POST bodies it
// reads: a body of known length reserves its length before it is read
// (413 at once when over max_body_bytes); a chunked one reserves as it is
// read. A request whose bytes are not free within bodyWait gets 503 with
// Retry-After. The bytes are held until the request is answered.
func (g *Gateway) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > g.opts.maxBody() {
			writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: fmt.Sprintf("request body exceeds the limit of %d bytes", g.opts.maxBody())})
			return
		}
		// A body must come at a pace: budget is held for it while it is
		// read, and a client that sends headers and then stalls must not
		// hold it (or a goroutine) for as long as it keeps the socket.
		d := &deadlineBody{rc: r.Body, ctl: *http.NewResponseController(w), start: time.Now()}
		d.extend(max(r.ContentLength, 0))
		r.Body = d
		key := g.bodyKey(r)
		if r.ContentLength < 0 {
			br := &budgetReader{rc: r.Body, ctx: r.Context(), b: g.bodies, key: key, paced: d}
			defer func() { g.bodies.release(key, br.reserved) }()
			r.Body = br
			next.ServeHTTP(w, r)
			return
		}
		if err := g.bodies.acquireWithin(r.Context(), key, r.ContentLength, bodyWait); err != nil {
			if r.Context().Err() == nil {
				writeLimitError(w, nil, g.bodies.full())
			}
			return
		}
		defer g.bodies.release(key, r.ContentLength)
		next.ServeHTTP(w, r)
	})
}

// bodyKey is who a request's bytes are held for in the body budget: its
// principal when authenticated (one agent, whatever its address), else
// its address (throttle.Client: an IPv6 /64 is one).
func (g *Gateway) bodyKey(r *http.Request) string {
	if r == nil {
		return ""
	}
	if a, ok := principalAgent(r.Context()); ok {
		return "p\x00" + a
	}
	return "c\x00" + clientAddr(r)
}

// budgetReader reserves budget for a body of unknown length as it is
// read, budgetStep at a time. It is used by one goroutine.
type budgetReader struct {
	rc       io.ReadCloser
	ctx      context.Context
	b        *byteBudget
	key      string // the client's, in b
	reserved int64  // given back by the middleware once the request is done
	read     int64
	paced    *deadlineBody // its read deadline grows with what is reserved
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.read == br.reserved {
		if err := br.b.acquireWithin(br.ctx, br.key, budgetStep, bodyWait); err != nil {
			if br.ctx.Err() != nil {
				return 0, br.ctx.Err()
			}
			return 0, br.b.full()
		}
		br.reserved += budgetStep
		br.paced.extend(budgetStep)
	}
	if room := br.reserved - br.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := br.rc.Read(p)
	br.read += int64(n)
	return n, err
}

func (br *budgetReader) Close() error { return br.rc.Close() }

// writeLock lets one writer at a time onto an upstream connection, and
// lets a waiter give up when its context ends: a write stuck on an
// upstream that stopped reading must not hold every later request (and
// the body budget each holds) with it. The zero value is unlocked.
type writeLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *writeLock) lock(ctx context.Context) error {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *writeLock) unlock() { <-l.ch }

// Body pacing: a request body must arrive within bodyGrace plus its
// length at bodyRate; past that, its read fails and the request ends,
// giving back its budget. A chunked body's deadline grows as it is read.
const (
	bodyGrace = 10 * time.Second
	bodyRate  = 64 << 10 // bytes a second
)

// deadlineBody sets the connection's read deadline for a request body and
// clears it once the body has been read (or failed): the server reads the
// connection again afterwards, to notice a client that leaves, and a
// deadline left set would end a long answer's stream.
type deadlineBody struct {
	rc    io.ReadCloser
	ctl   http.ResponseController // a copy of the one for the request: no allocation of its own
	start time.Time
	bytes int64 // the length the deadline allows for
	done  bool
}

func (d *deadlineBody) extend(n int64) {
	d.bytes += n
	_ = d.ctl.SetReadDeadline(d.start.Add(bodyGrace + time.Duration(d.bytes)*time.Second/bodyRate))
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	if err != nil && !d.done {
		d.done = true
		_ = d.ctl.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (d *deadlineBody) Close() error { return d.rc.Close() }

// sessionEnds sends the DELETEs that end upstream sessions in the
// background, at most maxConcurrentEnds at a time; its workers exist only
// while there is work.
type sessionEnds struct {
	g      *Gateway
	ctx    context.Context // cancelled by close once its grace is over
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	queue   []sessionEnd
	workers int
	closed  bool // no more are queued: the gateway is closed
}

type sessionEnd struct {
	rt *route
	id string // the upstream's session id
}

func newSessionEnds(g *Gateway) *sessionEnds {
	e := &sessionEnds{g: g}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// add queues the DELETE of upstream session id on rt.
func (e *sessionEnds) add(rt *route, id string) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, sessionEnd{rt: rt, id: id})
	start := e.workers < maxConcurrentEnds
	if start {
		e.workers++
		e.wg.Add(1)
	}
	e.mu.Unlock()
	if start {
		go e.work()
	}
}

func (e *sessionEnds) work() {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.workers--
			e.mu.Unlock()
			return
		}
		j := e.queue[0]
		e.queue[0] = sessionEnd{}
		e.queue = e.queue[1:]
		e.mu.Unlock()
		if e.ctx.Err() == nil {
			e.g.deleteUpstreamSession(e.ctx, j.rt, j.id)
		}
	}
}

// close gives the queued DELETEs up to grace to go out, then abandons the
// rest, and returns when no worker is left.
func (e *sessionEnds) close(grace time.Duration) {
	e.mu.Lock()
	e.closed = true // so no wg.Add races the Wait below
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	e.cancel()
	<-done
}

package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// statelessPool holds a bridged route's connections for MCP 2026-07-28
// requests, which belong to no session: one for each authenticated
// principal, so that what an upstream keeps per connection (a browser's
// cookies and open pages, a shell's directory, a login, a subscription, a
// logging level) is never shared between principals, and one for
// requests without a principal, which nothing tells apart. A principal's
// connection takes a place among the route's stdio children (its share of
// upstreams[].max_children, as a session's does; on an SSE or WebSocket
// upstream, at most max_sessions of them) and ends once idle for
// session_idle_timeout.
type statelessPool struct {
	g  *Gateway
	rt *route

	shared *statelessBridge // requests without a principal

	mu   sync.Mutex // guards m
	m    map[string]*pooledBridge
	idle time.Duration
}

// pooledBridge is one principal's connection in a statelessPool.
type pooledBridge struct {
	b    *statelessBridge
	slot *childSlot
	// Guarded by the pool's mu: the requests using it now, and when the
	// last of them ended.
	users    int
	lastUsed time.Time
}

func newStatelessPool(g *Gateway, rt *route) *statelessPool {
	return &statelessPool{g: g, rt: rt, shared: newStatelessBridge(g, rt), m: make(map[string]*pooledBridge), idle: g.opts.idleTimeout()}
}

// post serves a 2026-07-28 request on the connection of its principal.
func (p *statelessPool) post(w http.ResponseWriter, r *http.Request, x *exchange) {
	// Its answer has been passed on (route lets go of what the
	// interceptor noted before then), or it failed, refused here or on
	// its way up: none is left to issue a state, as in forward
	// (TestStatelessRefusedForgetsCalls).
	defer p.g.answered(x)
	principal, ok := principalAgent(r.Context())
	if !ok {
		p.shared.post(w, r, x)
		return
	}
	pb, err := p.acquire(principal)
	if err != nil {
		le, _ := asLimitError(err)
		writeLimitError(w, x.msgs[0].ID, le)
		return
	}
	defer p.release(pb)
	pb.b.post(w, r, x)
}

// acquire returns principal's connection, counted as in use until
// release, making it (and taking its child's place) if it has none. When
// the route's children are all running, the principals' connection unused
// longest ends to make room (what it kept is lost, as after its idle
// time); sessions' children are never taken. Only when every one is in
// use is the request refused.
func (p *statelessPool) acquire(principal string) (*pooledBridge, error) {
	for evicted := false; ; evicted = true {
		p.mu.Lock()
		pb, err := p.m[principal], error(nil)
		if pb == nil {
			var slot *childSlot
			if p.rt.children != nil {
				slot, err = p.rt.children.take(principal)
			} else if limit := p.g.opts.maxSessions(); len(p.m) >= limit {
				err = &limitError{key: "max_sessions", max: int64(limit), status: http.StatusServiceUnavailable, retryAfter: retrySession,
					msg: fmt.Sprintf("upstream %q holds its maximum of %d connections for principals' 2026-07-28 requests (max_sessions); retry later", p.rt.up.Name, limit)}
			}
			if err == nil {
				pb = &pooledBridge{b: newStatelessBridge(p.g, p.rt), slot: slot}
				p.m[principal] = pb
			}
		}
		if err == nil {
			pb.users++
			p.mu.Unlock()
			return pb, nil
		}
		var victim *pooledBridge
		if le, ok := asLimitError(err); ok && le.status == http.StatusServiceUnavailable && !evicted && !p.rt.children.shareFull(principal) {
			// With principal's share full, another's child ending would
			// make no room (TestStatelessIdleChildHoldsAgentShare).
			victim = p.takeIdle()
		}
		p.mu.Unlock()
		if victim == nil {
			return nil, err
		}
		victim.close()
	}
}

// takeIdle removes from the pool the principal's connection unused
// longest that serves no request, and returns it (nil: none). Callers
// hold p.mu.
func (p *statelessPool) takeIdle() *pooledBridge {
	var victim *pooledBridge
	name := ""
	for n, c := range p.m {
		if c.users == 0 && (victim == nil || c.lastUsed.Before(victim.lastUsed)) {
			victim, name = c, n
		}
	}
	if victim != nil {
		delete(p.m, name)
	}
	return victim
}

// evictIdle ends the principal's connection unused longest that serves
// no request, giving its child's place back; it reports whether there was
// one. A nil pool has none.
func (p *statelessPool) evictIdle() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	victim := p.takeIdle()
	p.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.close()
	return true
}

// evictIdleOf ends principal's connection if it serves no request, giving
// its child's place, one of principal's share, back; it reports whether
// it did (TestStatelessIdleChildHoldsAgentShare). A nil pool has none.
func (p *statelessPool) evictIdleOf(principal string) bool {
	if p == nil || principal == "" {
		return false
	}
	p.mu.Lock()
	pb := p.m[principal]
	if pb == nil || pb.users > 0 {
		p.mu.Unlock()
		return false
	}
	delete(p.m, principal)
	p.mu.Unlock()
	pb.close()
	return true
}

func (p *statelessPool) release(pb *pooledBridge) {
	p.mu.Lock()
	pb.users--
	pb.lastUsed = p.now()
	p.mu.Unlock()
}

func (p *statelessPool) now() time.Time {
	if p.g.opts.now != nil {
		return p.g.opts.now()
	}
	return time.Now()
}

// reap ends the principals' connections unused for the idle timeout,
// every tick until ctx ends.
func (p *statelessPool) reap(ctx context.Context) {
	everyTick(ctx, min(p.idle/2, time.Minute), func() {
		var idle []*pooledBridge
		cutoff := p.now().Add(-p.idle)
		p.mu.Lock()
		for principal, pb := range p.m {
			if pb.users == 0 && pb.lastUsed.Before(cutoff) {
				delete(p.m, principal)
				idle = append(idle, pb)
			}
		}
		p.mu.Unlock()
		for _, pb := range idle {
			pb.close()
		}
	})
}

func (pb *pooledBridge) close() {
	pb.b.close()
	pb.slot.release()
}

// close ends every connection of the pool.
func (p *statelessPool) close() {
	p.mu.Lock()
	all := p.m
	p.m = make(map[string]*pooledBridge)
	p.mu.Unlock()
	p.shared.close()
	for _, pb := range all {
		pb.close()
	}
}

// statelessBridge carries MCP 2026-07-28 requests, which belong to no
// session, to a bridged upstream (stdio, SSE, WebSocket) over one
// connection (statelessPool keeps one per principal). Request ids and progress tokens are rewritten to
// gateway-unique values on the way up and restored on the way down, so the
// requests of different clients never collide; nothing else in a message
// changes. A client that goes away cancels its request upstream.
type statelessBridge struct {
	g  *Gateway
	rt *route

	wmu writeLock // one writer at a time on the shared connection

	mu     sync.Mutex // guards the fields below
	up     transport.Conn
	read   chan struct{} // closed when up's reader has returned
	next   uint64
	calls  map[string]*slCall // upstream id -> call
	tokens map[string]*slCall // upstream progress token -> call
}

type slCall struct {
	s       *stream
	id      jsontext.Value // the client's id
	idKey   string         // its intercept.Message.IDKey
	token   jsontext.Value // the client's progress token, if any
	upID    string
	upToken string
	method  string
	cursor  string                // of a tools/list asked with one (intercept.ListCursor)
	cc      intercept.CallContext // the request's, for hiding tools in its answer
	uc      *upCall               // its measurement; nil: none
	dropped int                   // notifications its client was too slow for (the reader's)
	// tasks holds, for a task-augmented request, the messages about tasks
	// not yet known until its answer (taskhold.go); nil for another.
	tasks *taskHold
}

// send delivers a message held about a task to c's client.
func (c *slCall) send(msg []byte) error {
	c.s.offer(msg, false)
	return nil
}

func newStatelessBridge(g *Gateway, rt *route) *statelessBridge {
	return &statelessBridge{g: g, rt: rt, calls: make(map[string]*slCall), tokens: make(map[string]*slCall)}
}

// conn returns the shared upstream connection, dialing it if needed.
// Callers hold b.mu.
func (b *statelessBridge) conn() (transport.Conn, error) {
	if b.up != nil {
		return b.up, nil
	}
	up, err := b.rt.dialer.Dial(b.g.ctx)
	if err != nil {
		return nil, err
	}
	b.up = up
	read := make(chan struct{})
	b.read = read
	go func() {
		defer close(read)
		b.readLoop(up)
	}()
	return up, nil
}

func (b *statelessBridge) post(w http.ResponseWriter, r *http.Request, x *exchange) {
	m := x.msgs[0]
	if m.Kind == intercept.KindResponse || m.Kind == intercept.KindError {
		// The shared connection relays no server requests to anyone, so no
		// client has one to answer; a response written on it would answer
		// a request the upstream sent while serving another client's call
		// (ids are the upstream's own, small and guessable).
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "a response without a session answers nothing: the gateway relays no server requests to stateless clients"})
		return
	}
	if m.Kind != intercept.KindRequest {
		// Notifications carry nothing to correlate: cancellation is the
		// client closing its request, which the gateway turns into
		// notifications/cancelled with the upstream id; progress names a
		// token of the upstream's, which no client has been given.
		if m.Method != "notifications/cancelled" && m.Method != "notifications/progress" {
			body, err := b.g.closedSpelling(r.Context(), x, x.body)
			var up transport.Conn
			if err == nil {
				b.mu.Lock()
				up, err = b.conn()
				b.mu.Unlock()
			}
			if err == nil {
				err = b.write(r.Context(), up, body)
			}
			if err != nil {
				writeJSONRPCError(w, http.StatusBadGateway, nil, upstreamError(b.rt.up.Name, err))
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if v, _ := m.MetaVersion(); v == "" {
		// The upstream sees no HTTP headers: a request whose era only the
		// Mcp-Protocol-Version header gives would be served as a request
		// of the 2025-era session the connection is to it, one every
		// stateless client shares.
		writeJSONRPCError(w, http.StatusBadRequest, m.ID, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: a %s request without a session must carry io.modelcontextprotocol/protocolVersion in params._meta: upstream %q is reached over %s and sees no headers",
			x.version, b.rt.up.Name, b.rt.up.Transport)})
		return
	}
	// The client span's context goes on in the message; its attributes
	// carry the client's id, not the gateway's. An upstream closed to the
	// client gets the gateway's trace context, not the client's
	// (upstreamCall), so that is asked first when the message could carry
	// the client's: when spans are recorded (the gateway's is then a root
	// apart), when the client sent a traceparent header (read into the
	// call's context: traceCall), or when its _meta may have one (a byte
	// search: any other spelling of the names has an escape).
	asked := telemetry.Records(b.g.opts.Tracer) || len(r.Header["Traceparent"]) > 0 ||
		bytes.Contains(m.Meta, []byte("trace")) || bytes.IndexByte(m.Meta, '\\') >= 0
	closed := asked && b.g.ic.Closed(r.Context(), x.callContext())
	sctx, uc := b.g.startUpCall(r.Context(), x, b.g.callInfo(x), traceFor(closed))
	b.mu.Lock()
	up, err := b.conn()
	if err != nil {
		b.mu.Unlock()
		uc.end(err)
		b.g.failExchange(w, x, err)
		return
	}
	b.next++
	n := strconv.FormatUint(b.next, 10)
	c := &slCall{s: newStream(), id: m.ID, idKey: m.IDKey(), upID: `"sluice-` + n + `"`, method: m.Method, cursor: listCursors([]*intercept.Message{m})[m.IDKey()], cc: x.callContext(), uc: uc}
	if createsTask(m) {
		c.tasks = newTaskHold(b.g.ic, b.g.withheld)
		c.tasks.expect(1)
	}
	msg, err := intercept.WithMember(m.Raw, "id", jsontext.Value(c.upID))
	meta, params := m.Meta, m.Params
	if tok := intercept.ValidMember(m.Meta, "progressToken"); err == nil && tok != nil {
		c.token, c.upToken = tok, `"sluice-p-`+n+`"`
		if meta, err = intercept.WithMember(meta, "progressToken", jsontext.Value(c.upToken)); err == nil {
			if params, err = intercept.WithMember(params, "_meta", meta); err == nil {
				msg, err = intercept.WithMember(msg, "params", params)
			}
		}
		b.tokens[c.upToken] = c
	}
	switch {
	case err != nil:
	case closed:
		msg, err = withGatewayTrace(msg, params, meta, traceparentOf(sctx))
	default:
		if traced, ok := withTraceMeta(sctx, msg, params, meta); ok {
			msg = traced
		}
	}
	b.calls[c.upID] = c
	b.mu.Unlock()
	switch {
	case err != nil:
	case closed:
		msg, err = gatewaySpelling(msg)
	case !asked:
		msg, err = b.g.closedSpelling(r.Context(), x, msg)
	}
	if err == nil {
		err = b.write(r.Context(), up, msg)
	}
	if err != nil {
		b.forget(c, err)
		b.g.failExchange(w, x, err)
		return
	}
	if !b.g.answer(w, r, c.s, 1, true) {
		// The client left: tell the upstream to stop working on it.
		if b.forget(c, errCancelled) {
			cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"client disconnected"}}`, c.upID)
			// Bounded: an upstream that stopped reading must not keep
			// this handler (and its body budget) for good.
			ctx, stop := context.WithTimeout(context.Background(), cancelWriteTimeout)
			_ = b.write(ctx, up, []byte(cancel))
			stop()
		}
		return
	}
	b.forget(c, nil)
}

// methodListen opens a 2026-07-28 subscription: its acknowledgement,
// the notifications it asked for and its result carry its request's id in
// _meta[subscriptionKey].
const (
	methodListen    = "subscriptions/listen"
	subscriptionKey = "io.modelcontextprotocol/subscriptionId"
)

// subscriptionOf returns the subscription id in obj's _meta (params or
// result), nil if none.
func subscriptionOf(obj jsontext.Value) jsontext.Value {
	return intercept.Member(intercept.Member(obj, "_meta"), subscriptionKey)
}

// withSubscription returns obj with the subscription id in its _meta
// replaced by id.
func withSubscription(obj, id jsontext.Value) (jsontext.Value, error) {
	meta, err := intercept.WithMember(intercept.Member(obj, "_meta"), subscriptionKey, id)
	if err != nil {
		return nil, err
	}
	return intercept.WithMember(obj, "_meta", meta)
}

// cancelWriteTimeout bounds the write of the cancellation of a call
// whose client left.
const cancelWriteTimeout = 2 * time.Second

func (b *statelessBridge) write(ctx context.Context, up transport.Conn, msg []byte) error {
	if err := b.wmu.lock(ctx); err != nil {
		return err
	}
	defer b.wmu.unlock()
	return up.Write(ctx, msg)
}

// forget drops a call; it reports whether the call was still pending,
// and if it was, ends its measurement with cause.
func (b *statelessBridge) forget(c *slCall, cause error) bool {
	c.s.goneOnce.Do(func() { close(c.s.gone) })
	b.mu.Lock()
	_, pending := b.calls[c.upID]
	delete(b.calls, c.upID)
	if c.upToken != "" {
		delete(b.tokens, c.upToken)
	}
	b.mu.Unlock()
	if pending {
		c.uc.end(cause)
		c.tasks.settle(1)
		b.g.ic.Answered(c.cc, c.idKey)
	}
	return pending
}

func (b *statelessBridge) readLoop(up transport.Conn) {
	for {
		raw, err := up.Read(b.g.ctx)
		if err != nil {
			b.fail(up, b.g.withheld.readFailed(err))
			return
		}
		m, err := intercept.DecodeMessage(raw)
		if err != nil {
			b.g.log.Warn("undecodable message from upstream", "upstream", b.rt.up.Name, "err", err)
			continue
		}
		if m.Kind == intercept.KindRequest {
			b.answerAsk(up, m)
			continue
		}
		b.route(m)
	}
}

// answerAsk answers a request of the upstream's (elicitation, sampling,
// roots, ping) itself, as the gateway's own listing connection does: no
// client of this connection can be asked (2026-07-28 clients are asked
// with input_required results), and unanswered, the upstream's tool would
// wait on it for good, and its client's call with it. The write is bounded
// (cancelWriteTimeout): an upstream that stops reading holds its own
// reader no longer.
func (b *statelessBridge) answerAsk(up transport.Conn, m *intercept.Message) {
	answer := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
	if m.Method != "ping" {
		answer = intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeMethodNotFound,
			Message: "the gateway relays no requests to clients without a session: " + m.Method + " cannot be asked of a 2026-07-28 client this way (use an input_required result)"})
	}
	ctx, stop := context.WithTimeout(b.g.ctx, cancelWriteTimeout)
	defer stop()
	if err := b.write(ctx, up, answer); err != nil {
		b.g.log.Debug("answering an upstream's request failed", "upstream", b.rt.up.Name, "method", m.Method, "err", err)
	}
}

// route restores the client's id or progress token and delivers m.
func (b *statelessBridge) route(m *intercept.Message) {
	b.mu.Lock()
	var c *slCall
	var out jsontext.Value
	var err error
	switch m.Kind {
	case intercept.KindResponse, intercept.KindError:
		if c = b.calls[string(m.ID)]; c != nil {
			delete(b.calls, c.upID)
			out, err = intercept.WithMember(m.Raw, "id", c.id)
			if err == nil && m.Kind == intercept.KindResponse && c.method == methodListen && string(subscriptionOf(m.Result)) == c.upID {
				var result jsontext.Value
				if result, err = withSubscription(m.Result, c.id); err == nil {
					out, err = intercept.WithMember(out, "result", result)
				}
			}
		}
	case intercept.KindNotification:
		var params jsontext.Value
		if tok := intercept.Member(m.Params, "progressToken"); tok != nil {
			if c = b.tokens[string(tok)]; c != nil {
				params, err = intercept.WithMember(m.Params, "progressToken", c.token)
			}
		} else if sub := subscriptionOf(m.Params); sub != nil {
			// A subscription's acknowledgement and changes name the
			// listen request by the gateway's id for it.
			if c = b.calls[string(sub)]; c != nil && c.method == methodListen {
				params, err = withSubscription(m.Params, c.id)
			} else {
				c = nil
			}
		}
		if c != nil && err == nil {
			out, err = intercept.WithMember(m.Raw, "params", params)
		}
	}
	b.mu.Unlock()
	if c != nil && (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) {
		c.uc.end(responseError(m))
	}
	if c == nil || err != nil {
		// Nothing to correlate it with: no client of this shared connection
		// asked for it.
		b.g.log.Debug("uncorrelated message from upstream not delivered", "upstream", b.rt.up.Name, "method", m.Method, "err", err)
		return
	}
	// Before a message about a task not yet the client's is held: it
	// would be released unscreened.
	if m.Kind == intercept.KindNotification {
		if withheld, instead := withholdUpstreamMessage(b.g.ic, c.cc, m, nil); withheld {
			if instead == nil {
				return
			}
			out = instead
		}
	}
	if shown, changed := screenUpdate(b.g.ctx, b.g.ic, b.g.withheld, c.cc, m, out); changed {
		if shown == nil {
			return
		}
		out = shown
	}
	if m.Kind == intercept.KindNotification && b.g.ic.ForeignTask(b.g.ctx, c.cc, m) {
		held, owned := c.tasks.hold(b.g.ctx, c.cc, m, out, c)
		if !owned {
			if !held {
				b.g.withheld.drop(c.cc, m)
			}
			return
		}
	}
	if m.Kind == intercept.KindResponse && c.method == "tools/list" {
		// Recorded before the client has it: a call it makes on seeing
		// the list is decided with the list, and the list is screened
		// against what was recorded (a drifted tool shown as pinned).
		b.g.ic.ObserveToolsPageWith(b.rt.up.Name, m.Result, c.cursor, c.cc.ClientCapabilities)
	}
	if m.Kind == intercept.KindResponse && screened(b.g.ic, c.method, out) {
		out, _ = screenAnswer(b.g.ctx, b.g.ic, c.cc, c.method, c.cursor, c.id, c.idKey, out, m.Result)
	}
	if m.Kind == intercept.KindError {
		out, _ = screenError(b.g.ic, c.cc, c.method, c.id, c.idKey, out, m.Error)
	}
	if m.Kind != intercept.KindNotification {
		// Its handle, if any, is recorded: what was held about the task
		// goes first, in the order the upstream sent it.
		c.tasks.settle(1)
	}
	// The reader serves every client of the connection: it never waits
	// on one. A notification its client is too slow for is dropped; the
	// answer waits for the client on a goroutine of its own.
	final := m.Kind != intercept.KindNotification
	if final {
		// Its requestState, if any, is recorded (screenAnswer): nothing
		// is left for what expectState noted, forgotten before the
		// client has the answer.
		b.g.ic.Answered(c.cc, c.idKey)
	}
	if !c.s.offer(out, final) {
		c.dropped++
	}
	if final && c.dropped > 0 {
		b.g.log.Warn("notifications dropped for a stateless client that did not read them in time",
			"upstream", b.rt.up.Name, "method", c.method, "dropped", c.dropped)
	}
	if m.Kind == intercept.KindResponse && intercept.ActionMethod(c.method) {
		b.g.ic.ObserveResult(c.cc, c.idKey, m.Result)
	}
	if m.Kind == intercept.KindResponse && intercept.ShowsTask(c.method) {
		b.g.ic.ObserveTaskResult(c.cc, c.method, m.Result)
	}
}

// fail answers every pending call with an error naming the upstream and
// drops the connection so the next request redials.
func (b *statelessBridge) fail(up transport.Conn, cause error) {
	b.mu.Lock()
	calls := b.calls
	b.calls, b.tokens = make(map[string]*slCall), make(map[string]*slCall)
	if b.up == up {
		b.up = nil
	}
	b.mu.Unlock()
	_ = up.Close()
	err := upstreamError(b.rt.up.Name, cause)
	for _, c := range calls {
		c.uc.end(cause)
		// Answered, as forget has a pending call: what was noted of it
		// (a requestState's binding) is let go, and what was held
		// about its task (TestStatelessCrashForgetsCalls).
		c.tasks.settle(1)
		b.g.ic.Answered(c.cc, c.idKey)
		// Offered, as route does: a client that does not read must not
		// keep the others' errors, and the reader, waiting
		// (TestAttackStatelessFailStalledClient).
		c.s.offer(intercept.ErrorResponse(c.id, err), true)
	}
}

// close drops the shared connection and waits for its reader, which
// answers the calls still pending with an error; their measurements end
// before close returns, here or in the reader, so none outlives the
// gateway.
func (b *statelessBridge) close() {
	b.mu.Lock()
	up, read := b.up, b.read
	b.up = nil
	ucs := make([]*upCall, 0, len(b.calls))
	for _, c := range b.calls {
		ucs = append(ucs, c.uc)
	}
	b.mu.Unlock()
	if up != nil {
		_ = up.Close()
	}
	for _, uc := range ucs {
		uc.end(ErrSessionEnded)
	}
	if read != nil {
		<-read
	}
}

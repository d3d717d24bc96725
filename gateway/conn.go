package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// relay pumps messages between a downstream client Conn and an upstream
// Conn, sending every client message through the interceptor first. It
// returns when either side ends or ctx is cancelled; both Conns are closed.
type relay struct {
	// idle, if set, ends the connection once nothing has passed either
	// way and no request has waited for that long (session_idle_timeout
	// for /ws and /sse: a connection is a session); lastActive is when
	// something last did (unix nanoseconds).
	idle       time.Duration
	lastActive atomic.Int64

	up        *Upstream
	lister    *toolLister // lists up's tools for a client that did not (lister.go)
	ic        *intercept.Interceptor
	budget    *byteBudget // nil: requests hold no room
	budgetKey string      // the client's, in budget (Gateway.bodyKey)
	log       *slog.Logger
	withheld  *withheldTasks // counts messages about another's task not delivered
	drops     dropLog        // rate-limits the log of unreadable upstream messages
	session   string
	down, upc transport.Conn
	approver  Approver // nil: held calls are only rendered
	tracer    telemetry.Tracer
	metrics   telemetry.Metrics
	kind      string // downstream transport: websocket, sse or stdio
	// lease, if set, counts the connection against the agent it belongs
	// to once its initialize arrives, or refuses it (limits.go).
	lease func(agent string) error

	// opened is the /ws upgrade or /sse GET that opened the connection;
	// nil for stdio. Its agent header names the connection's agent.
	opened *http.Request
	ident  identifier
	// onRefused is Options.OnIdentityRefused.
	onRefused func(IdentityRefusal)

	// Writes to either side come from more than one goroutine (the two
	// pumps, approval questions); a Conn takes one writer at a time.
	downMu, upMu sync.Mutex
	// refusals sends up the gateway's answers to its withheld requests
	// (upstreamasks.go).
	refusals askRefusals

	// ids are the requests sent under the gateway's ids while the
	// upstream was closed to the client, asked the upstream's requests
	// passed on to it until answered (ids.go).
	ids   idTable
	asked askedIDs
	// holds are the calls waiting for the user's approval, which the
	// client may cancel (heldcalls.go).
	holds heldCalls
	// lapse ends the connection once, when its principal's credential
	// no longer holds (lapsed).
	lapse sync.Once

	mu      sync.Mutex        // guards the fields below
	pending map[string]string // request id -> method, client to upstream
	// cancels are the latest requests the client cancelled, at most
	// maxCancels, oldest first: an answer the upstream sends one anyway
	// is passed on (the client ignores it), not withheld as stray.
	cancels []string
	// cancelledLists are the lists in pending the client cancelled, at
	// most maxCancels, oldest first (cancelled).
	cancelledLists []string
	// swapped holds the requests in pending sent under the gateway's ids
	// (ids.go): the others went under the client's (sentAsIs).
	swapped map[string]bool
	// cursors are the cursors of the tools/list requests in pending
	// asked with one (intercept.ListCursor), by id.
	cursors map[string]string
	// listCaps are the client capabilities of the tools/list requests in
	// pending that declare them in their _meta (2026-07-28), by id; the
	// others are the connection's (clientCaps).
	listCaps map[string]jsontext.Value
	// pendingBytes is what pending, cursors and listCaps hold (ids,
	// methods, cursors and capabilities): with its length, bounded by
	// maxConnPending and maxConnPendingBytes.
	pendingBytes int
	// held is the room in budget (max_inflight_body_bytes) the requests
	// in pending keep until they are answered, by the id whose answer
	// gives it back: a request forwarded to an HTTP upstream is held
	// until its answer comes, as a POST's body is.
	held        map[string]int64
	started     bool // the first request has fixed owner (and a 2026-07-28 one, version)
	handshake   bool // an initialize request has been admitted
	owner       principal
	version     string
	elicitForm  bool                               // the client declared form elicitation at initialize
	clientCaps  jsontext.Value                     // the capabilities the client declared at initialize
	initialized bool                               // the client sent initialize: its requests' _meta capabilities are not its session's
	asks        map[string]chan *intercept.Message // open approval questions by JSON id
	spans       map[string]telemetry.Span          // server spans of requests awaiting a response
	upcalls     map[string]*upCall                 // measurements of requests forwarded upstream, by id
	nextAsk     uint64
	asking      sync.WaitGroup
	// creating holds the task-augmented requests in pending; tasks, the
	// messages about tasks not yet known held while they wait, for sink
	// (taskhold.go). Set by run.
	creating map[string]bool
	tasks    *taskHold
	sink     *relaySink
}

// relaySink delivers a message held about a task to the relay's client.
type relaySink struct {
	r   *relay
	ctx context.Context
}

func (s *relaySink) send(msg []byte) error { return s.r.toClient(s.ctx, msg) }

// doneCreating forgets which of answers answered task-augmented requests,
// and returns how many.
func (r *relay) doneCreating(answers []*intercept.Message) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.creating) == 0 {
		return 0
	}
	n := 0
	for _, m := range answers {
		if r.creating[m.IDKey()] {
			delete(r.creating, m.IDKey())
			n++
		}
	}
	return n
}

func (r *relay) toClient(ctx context.Context, b []byte) error {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	return r.down.Write(ctx, b)
}

func (r *relay) toUpstream(ctx context.Context, b []byte) error {
	r.upMu.Lock()
	defer r.upMu.Unlock()
	return r.upc.Write(ctx, b)
}

func (r *relay) callContext() intercept.CallContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	cc := intercept.CallContext{Upstream: r.up.Name, Target: r.up.target(), SessionID: telemetry.SessionRef(r.session), TaskScope: telemetry.SessionRef(r.session), Agent: r.owner.agent, ClientName: r.owner.clientName(), ProtocolVersion: r.version,
		ClientCapabilities: r.clientCaps}
	if r.lister != nil {
		cc.Lister = r.lister
	}
	return cc
}

func (r *relay) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.pending = make(map[string]string)
	r.cursors = make(map[string]string)
	r.listCaps = make(map[string]jsontext.Value)
	r.held = make(map[string]int64)
	defer r.releaseHeld()
	r.asks = make(map[string]chan *intercept.Message)
	r.spans = make(map[string]telemetry.Span)
	r.upcalls = make(map[string]*upCall)
	r.creating = make(map[string]bool)
	r.tasks, r.sink = newTaskHold(r.ic, r.withheld), &relaySink{r: r, ctx: ctx}
	defer r.tasks.forget(r.sink)
	defer r.endSpans(ErrSessionEnded)
	defer r.asking.Wait()
	errc := make(chan error, 2)
	if r.idle > 0 {
		r.lastActive.Store(time.Now().UnixNano())
		go r.endWhenIdle(ctx)
	}
	go func() { errc <- r.clientToUpstream(ctx) }()
	go func() { errc <- r.upstreamToClient(ctx) }()
	var watching sync.WaitGroup
	watching.Go(func() { watchCredential(ctx, func(err error) { r.lapsed(ctx, err) }) })
	err := <-errc
	cancel()
	r.down.Close()
	r.upc.Close()
	<-errc
	watching.Wait()
	// The connection is its client's session: the calls still held on
	// it are abandoned, as a session's DELETE abandons its own
	// (heldcalls.go), and no later approval sends one. Its pumps have
	// ended: none is held after this.
	r.holds.cancelAll(r.approver, r.callContext().Agent)
	return err
}

// endWhenIdle closes the client's side of the connection once it has
// been idle for r.idle: its reader then ends the relay.
func (r *relay) endWhenIdle(ctx context.Context) {
	t := time.NewTicker(max(r.idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		busy := len(r.pending) > len(r.cancelledLists) || len(r.asks) > 0
		r.mu.Unlock()
		if busy {
			r.lastActive.Store(time.Now().UnixNano())
			continue
		}
		if time.Since(time.Unix(0, r.lastActive.Load())) >= r.idle {
			r.log.Debug("idle connection ended", "upstream", r.up.Name, "session", telemetry.SessionRef(r.session), "idle", r.idle)
			_ = r.down.Close()
			return
		}
	}
}

func (r *relay) clientToUpstream(ctx context.Context) error {
	for {
		b, err := r.down.Read(ctx)
		if err != nil {
			return err
		}
		r.lastActive.Store(time.Now().UnixNano())
		if err := credentialGone(ctx); err != nil {
			r.lapsed(ctx, err)
			return err // ends the connection
		}
		msgs, batch, err := intercept.Decode(b)
		if err != nil {
			if werr := r.toClient(ctx, intercept.ErrorResponse(nil, err)); werr != nil {
				return werr
			}
			continue
		}
		if err := r.admit(msgs); err != nil {
			var id jsontext.Value
			if !batch {
				id = msgs[0].ID
			}
			if werr := r.toClient(ctx, intercept.ErrorResponse(id, err)); werr != nil {
				return werr
			}
			continue
		}
		cc := r.callContext()
		if batch {
			for _, m := range msgs {
				r.holds.cancel(m, r.approver, cc.Agent)
			}
			if reply := checkBatch(ctx, r.ic, msgs, cc); reply != nil {
				if err := r.toClient(ctx, reply); err != nil {
					return err
				}
				continue
			}
		} else {
			m := msgs[0]
			if err := r.admitAgent(ctx, m); err != nil {
				return err
			}
			if isApprovalAnswer(m) {
				r.answer(m) // the gateway's own question: never forwarded
				continue
			}
			var ans *approvalAnswer
			if stripped, a, ok, err := takeApprovalAnswer(m); err != nil {
				if werr := r.toClient(ctx, intercept.ErrorResponse(m.ID, err)); werr != nil {
					return werr
				}
				continue
			} else if ok {
				call, err := admitAnswer(r.approver, &a, stripped, cc)
				if err != nil {
					if werr := r.toClient(ctx, intercept.ErrorResponse(m.ID, err)); werr != nil {
						return werr
					}
					continue
				}
				m, b, ans = call, call.Raw, &a
				msgs = []*intercept.Message{m}
			}
			if rm := intercept.Restate(m); rm != m {
				// A cancellation without its reason (intercept.Restate).
				m, b = rm, rm.Raw
				msgs = []*intercept.Message{m}
			}
			if r.holds.cancel(m, r.approver, cc.Agent) {
				continue // a call held for approval: the upstream never saw it
			}
			cctx := r.startSpan(ctx, m, cc)
			var dec intercept.Decision
			var reply []byte
			ok := true
			r.stage(cctx, func(ctx context.Context) { dec, reply, ok = r.check(ctx, m, cc, ans) })
			if !ok {
				r.endSpan(m.IDKey(), nil)
				// The question's context keeps the call's span, so an
				// approved call's client span joins the same trace.
				if r.ask(cctx, m, b, dec, reply) {
					continue
				}
				if err := r.toClient(ctx, reply); err != nil {
					return err
				}
				sub := intercept.WithheldAnswer(m, dec)
				if sub == nil {
					continue
				}
				// The client's answer carried data past a closed route:
				// the upstream's request ends with the gateway's error.
				m, b, msgs = sub, sub.Raw, []*intercept.Message{sub}
			}
			if err := r.forward(ctx, cctx, msgs, false, b); err != nil {
				return err
			}
			continue
		}
		if err := r.forward(ctx, ctx, msgs, true, b); err != nil {
			return err
		}
	}
}

// forward sends b, the client's msgs, upstream and tracks their requests.
// Each request's upstream call is measured; one sent on its own (not in a
// batch) gets its client span as a child of the span in parent, with the
// span's trace context in params._meta of the message sent.
func (r *relay) forward(ctx, parent context.Context, msgs []*intercept.Message, batch bool, b []byte) error {
	if err := r.roomFor(msgs); err != nil {
		for _, m := range msgs {
			if m.Kind == intercept.KindRequest {
				r.endSpan(m.IDKey(), err)
				if werr := r.toClient(ctx, intercept.ErrorResponse(m.ID, err)); werr != nil {
					return werr
				}
			}
		}
		return nil
	}
	if err := r.hold(ctx, msgs, int64(len(b))); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, m := range msgs {
			if m.Kind == intercept.KindRequest {
				r.endSpan(m.IDKey(), err)
				if werr := r.toClient(ctx, intercept.ErrorResponse(m.ID, err)); werr != nil {
					return werr
				}
			}
		}
		return nil
	}
	closed := carriesIDs(msgs) && r.ic.Closed(ctx, r.callContext())
	measured := r.tracer != nil || r.metrics != nil
	var cc intercept.CallContext
	if measured {
		cc = r.callContext()
	}
	var trace jsontext.Value // a closed upstream's in place of the client's
	var cancels []string
	for _, m := range msgs {
		if id, ok := cancelledID(m); ok {
			// Ended once the closed upstream's ids are asked (ids.send):
			// ending it forgets it.
			cancels = append(cancels, id)
			continue
		}
		if !measured || m.Kind != intercept.KindRequest {
			continue
		}
		how := untraced
		if !batch {
			how = traceFor(closed)
		}
		sctx, uc := startUpCall(parent, r.tracer, r.metrics, r.up, connCall(m, cc, r.kind), how)
		switch how {
		case tracedApart:
			trace = traceparentOf(sctx)
		case traced:
			if out, ok := withTraceMeta(sctx, m.Raw, m.Params, m.Meta); ok {
				b = out
			}
		}
		r.mu.Lock()
		old := r.upcalls[m.IDKey()]
		r.upcalls[m.IDKey()] = uc
		r.mu.Unlock()
		old.end(errReplaced)
	}
	sent, err := b, error(nil)
	if closed {
		sent, err = r.ids.send(b, batch, &r.asked, trace)
	}
	for _, id := range cancels {
		r.cancelled(id)
	}
	switch {
	case errors.Is(err, errNothingSent):
		return nil // a cancellation of nothing sent
	case err != nil:
		r.refuse(ctx, msgs, err)
		return nil
	}
	b = sent
	r.track(msgs, closed)
	if err := r.toUpstream(ctx, b); err != nil {
		if _, ok := errors.AsType[*transport.MessageError](err); ok {
			// Nothing was sent (b was rewritten into something that is not
			// JSON): the upstream is fine, only these requests fail.
			r.refuse(ctx, msgs, err)
			return nil
		}
		if se, ok := errors.AsType[*transport.HTTPStatusError](err); ok && se.StatusCode != http.StatusNotFound {
			// The upstream refused this message (notifications or
			// answers: a request's refusal comes back as its error
			// answer), not the session, which goes on, as a client
			// directly on the upstream's goes on: before, one refused
			// notification (mcp-go's 400 to a 2026-07-28 client's
			// notifications/roots/list_changed) ended the connection.
			// 404 is the session gone.
			r.log.Warn("upstream refused a message", "upstream", r.up.Name, "session", telemetry.SessionRef(r.session), "err", redactURLs(err))
			r.refuse(ctx, msgs, err)
			return nil
		}
		r.failPending(ctx, err)
		return fmt.Errorf("upstream %s: %w", r.up.Name, err)
	}
	return nil
}

// sentAsIs reports whether the client's request whose id has key went to
// the upstream under that id (it was not closed to the client) and still
// waits (idTable.asIs).
func (r *relay) sentAsIs(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pending[key]
	return ok && !r.swapped[key]
}

// cancelled ends the spans and the measurement of the request with id
// the client has withdrawn: the upstream need not answer it any more.
func (r *relay) cancelled(id string) {
	r.endUpCall(id, errCancelled)
	r.endSpan(id, errCancelled)
	// A cancelled request is answered by nobody (servers should not):
	// it no longer waits, nor counts against the bounds or the idle
	// timer. A list stays, for a while: should its answer come anyway, it
	// is still screened and recorded as one; but as a server should not
	// answer it (and over Streamable HTTP in the 2026-07-28 era the
	// cancel closes its stream, so none can), only the latest maxCancels
	// stay, and they keep neither the connection busy nor room among
	// maxConnPending. An older one's answer is a stray, withheld.
	r.mu.Lock()
	if method, ok := r.pending[id]; ok {
		if listMethod(method) {
			if !slices.Contains(r.cancelledLists, id) {
				r.cancelledLists = append(r.cancelledLists, id)
			}
			if len(r.cancelledLists) > maxCancels {
				r.forget(r.cancelledLists[0])
			}
		} else {
			r.forget(id)
			r.cancels = append(r.cancels, id)
			if len(r.cancels) > maxCancels {
				r.cancels = r.cancels[1:]
			}
		}
	}
	r.mu.Unlock()
}

// maxCancels bounds relay.cancels.
const maxCancels = 64

// check decides about m, applying the user's answer to a 2026-07-28
// approval question (admitted by admitAnswer) when m carried one for the
// very request holding it.
func (r *relay) check(ctx context.Context, m *intercept.Message, cc intercept.CallContext, a *approvalAnswer) (intercept.Decision, []byte, bool) {
	r.mu.Lock()
	cc.ClientCanApprove = canAsk(r.approver, m, cc.ProtocolVersion, r.elicitForm, true)
	r.mu.Unlock()
	dec, reply, ok := r.ic.CheckDecision(ctx, m, cc)
	if a != nil && a.answered && !ok && r.approver != nil && !dec.OperatorOnly &&
		dec.Verdict == intercept.RequireApproval && dec.ApprovalID != "" && dec.ApprovalID == a.sealed.ApprovalID {
		if _, err := r.approver.Decide(dec.ApprovalID, a.approve, approvedBy(cc.Agent)); err != nil {
			r.log.Debug("approval answer not applied", "approval", dec.ApprovalID, "err", err)
		}
		id := dec.ApprovalID
		if dec, reply, ok = r.ic.CheckDecision(ctx, m, cc); !ok {
			endLapsed(ctx, r.approver, id, cc.Agent)
		}
	}
	return dec, reply, ok
}

// ask puts a held call to the client's user, if it can be asked: an
// input_required result in 2026-07-28, an elicitation/create request
// otherwise, answered while other messages keep flowing. It reports false
// when the caller should send the rendered hold instead.
func (r *relay) ask(ctx context.Context, m *intercept.Message, raw []byte, dec intercept.Decision, held []byte) bool {
	if r.approver == nil || dec.Verdict != intercept.RequireApproval || dec.ApprovalID == "" || dec.OperatorOnly {
		return false
	}
	form := approvalForm(m, r.up.Name, dec)
	cc := r.callContext()
	if isModern(cc.ProtocolVersion) {
		state, ok := sealState(r.approver, m, dec)
		if !ok {
			return false
		}
		return r.toClient(ctx, inputRequired(m.ID, form, state)) == nil
	}
	r.mu.Lock()
	can := r.elicitForm

	r.nextAsk++
	id := approvalID(approvalIDPrefix, r.nextAsk)
	answers := make(chan *intercept.Message, 1)
	if can {
		r.asks[id] = answers
	}
	r.mu.Unlock()
	if !can {
		return false
	}
	h := r.holds.hold(m.IDKey(), dec.ApprovalID)
	r.asking.Add(1)
	go func() {
		defer r.asking.Done()
		later := false
		defer func() {
			r.mu.Lock()
			delete(r.asks, id)
			r.mu.Unlock()
			switch {
			case ctx.Err() != nil:
				// The connection ended: its hold is run's to cancel.
			case later:
				r.holds.releaseLater(m.IDKey(), h)
			default:
				r.holds.release(m.IDKey(), h)
			}
		}()
		later = r.elicit(ctx, m, raw, dec, held, id, form, answers, h)
	}()
	return true
}

// elicit asks, waits for the user (or an operator, or the timeout), then
// forwards the call or answers it with the outcome. It reports whether the
// client may still cancel the call it ended the wait for: it answered the
// question with an error (go-sdk's client, whose user gave up, does, then
// cancels the call, which withdraws the request, as on an HTTP session),
// or the question could not be sent (the connection is going away).
func (r *relay) elicit(ctx context.Context, m *intercept.Message, raw []byte, dec intercept.Decision, held []byte, id string, form elicitParams, answers <-chan *intercept.Message, h *heldCall) (mayCancel bool) {
	q, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": jsontext.Value(id), "method": "elicitation/create", "params": form},
		json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return
	}
	if r.toClient(ctx, q) != nil {
		// The connection is going away: the call stays held a while, for
		// its end to cancel (run).
		return true
	}
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	decided := make(chan struct{})
	go func() {
		defer close(decided)
		_, _ = r.approver.Wait(waitCtx, dec.ApprovalID)
	}()
	defer func() { stop(); <-decided }()
	select {
	case <-ctx.Done():
		return // the connection ended: run withdraws the request
	case <-h.cancelled:
		// The client cancelled the call (heldcalls.go): it is not
		// answered, and the question is withdrawn.
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client cancelled the call"}}`, id)
		_ = r.toClient(ctx, []byte(cancel))
		return
	case ans := <-answers:
		approve, answered := false, false
		if ans.Kind == intercept.KindResponse {
			approve, answered = readApproval(ans.Result)
		}
		if !answered {
			_ = r.toClient(ctx, held)
			return true
		}
		cc := r.callContext()
		if _, err := r.approver.Decide(dec.ApprovalID, approve, approvedBy(cc.Agent)); err != nil {
			r.log.Debug("approval answer not applied", "approval", dec.ApprovalID, "err", err)
		}
	case <-decided:
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the approval was decided elsewhere or expired"}}`, id)
		if r.toClient(ctx, []byte(cancel)) != nil {
			return
		}
	}
	if !r.holds.release(m.IDKey(), h) {
		return // cancelled meanwhile: it goes nowhere, and gets no answer
	}
	cc := r.callContext()
	if _, reply, ok := r.check(ctx, m, cc, nil); !ok {
		endLapsed(ctx, r.approver, dec.ApprovalID, cc.Agent)
		_ = r.toClient(ctx, reply)
		if err := credentialGone(ctx); err != nil {
			r.lapsed(ctx, err) // refused for it: nothing more on this connection
		}
		return
	}
	_ = r.forward(ctx, ctx, []*intercept.Message{m}, false, raw)
	return false
}

// lapsedWriteWait bounds sending the error that tells a client its
// credential no longer holds, before its connection is closed.
const lapsedWriteWait = 5 * time.Second

// lapsed ends the connection, whose principal's credential no longer
// holds (err, intercept.Principal.Gone), once: the client gets err, then
// the connection closes (with status 1008 on a WebSocket), its reader
// returns and run ends the relay, abandoning its held calls.
func (r *relay) lapsed(ctx context.Context, err error) {
	r.lapse.Do(func() {
		wctx, cancel := context.WithTimeout(ctx, lapsedWriteWait)
		_ = r.toClient(wctx, intercept.ErrorResponse(nil, err))
		cancel()
		closeLapsed(r.down)
	})
}

// ErrSessionEnded ends the spans of requests a session left unanswered.
var ErrSessionEnded = errors.New("session ended before the response")

// startSpan starts the server span of a client request (for as long as
// it waits for its response) and returns its context.
func (r *relay) startSpan(ctx context.Context, m *intercept.Message, cc intercept.CallContext) context.Context {
	if r.tracer == nil || m.Kind != intercept.KindRequest {
		return ctx
	}
	ctx, span := telemetry.StartCall(extractMeta(ctx, m), r.tracer, connCall(m, cc, r.kind))
	r.mu.Lock()
	r.spans[m.IDKey()] = span
	r.mu.Unlock()
	return ctx
}

func (r *relay) stage(ctx context.Context, fn func(context.Context)) {
	if r.tracer == nil {
		fn(ctx)
		return
	}
	ctx, span := telemetry.StartStage(ctx, r.tracer, telemetry.StagePolicy)
	fn(ctx)
	span.End(nil)
}

func (r *relay) endSpan(id string, err error) {
	r.mu.Lock()
	span := r.spans[id]
	delete(r.spans, id)
	r.mu.Unlock()
	if span != nil {
		span.End(err)
	}
}

// endUpCall ends the measurement of the upstream call with id, if any.
func (r *relay) endUpCall(id string, err error) {
	r.mu.Lock()
	uc := r.upcalls[id]
	delete(r.upcalls, id)
	r.mu.Unlock()
	uc.end(err)
}

// endSpans ends every span and measurement still open, children first.
func (r *relay) endSpans(err error) {
	r.mu.Lock()
	spans, upcalls := r.spans, r.upcalls
	r.spans, r.upcalls = map[string]telemetry.Span{}, map[string]*upCall{}
	r.mu.Unlock()
	for _, uc := range upcalls {
		uc.end(err)
	}
	for _, s := range spans {
		s.End(err)
	}
}

// answer hands the client's response to an approval question to the
// goroutine asking it; answers nobody waits for are dropped.
func (r *relay) answer(m *intercept.Message) {
	r.mu.Lock()
	ch := r.asks[m.IDKey()]
	delete(r.asks, m.IDKey())
	r.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// track remembers the client's requests so their responses can be observed
// and, if the upstream dies, answered with an error; swapped: they were
// sent under the gateway's ids.
func (r *relay) track(msgs []*intercept.Message, swapped bool) {
	n := 0
	defer func() { r.tasks.expect(n) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		if createsTask(m) && !r.creating[m.IDKey()] {
			r.creating[m.IDKey()] = true
			n++
		}
		if m.Kind == intercept.KindRequest {
			if old, ok := r.pending[m.IDKey()]; ok {
				r.pendingBytes -= len(m.IDKey()) + len(old)
				// A new request under a cancelled list's id is not cancelled.
				if i := slices.Index(r.cancelledLists, m.IDKey()); i >= 0 {
					r.cancelledLists = slices.Delete(r.cancelledLists, i, i+1)
				}
			}
			if old, ok := r.cursors[m.IDKey()]; ok {
				r.pendingBytes -= len(old)
				delete(r.cursors, m.IDKey())
			}
			if old, ok := r.listCaps[m.IDKey()]; ok {
				r.pendingBytes -= len(old)
				delete(r.listCaps, m.IDKey())
			}
			r.pending[m.IDKey()] = m.Method
			r.pendingBytes += len(m.IDKey()) + len(m.Method)
			switch {
			case swapped && r.swapped == nil:
				r.swapped = map[string]bool{m.IDKey(): true}
			case swapped:
				r.swapped[m.IDKey()] = true
			default:
				delete(r.swapped, m.IDKey())
			}
			if c := listCursors([]*intercept.Message{m})[m.IDKey()]; c != "" {
				r.cursors[m.IDKey()] = c
				r.pendingBytes += len(c)
			}
			if c := metaCapabilities(m); c != nil && m.Method == "tools/list" && !r.initialized && isModern(r.version) {
				// A 2026-07-28 request's; in a session its server lists
				// what its initialize declared (clientCapabilities), and
				// an earlier request has none in its _meta
				// (TestAttackCapabilitySetMetaOldEraConn).
				r.listCaps[m.IDKey()] = bytes.Clone(c) // not the whole message
				r.pendingBytes += len(c)
			}
			if m.Method == "initialize" {
				r.elicitForm = formElicitation(intercept.Member(m.Params, "capabilities"))
				// A copy, cut as a session's (forward): a slice would hold
				// the whole message for the connection's life.
				r.clientCaps = bytes.Clone(sealableCaps(initCapabilities(m)))
				r.initialized = true
			}
		}
	}
}

// admit fixes who the connection belongs to at its first request (and,
// when that is a 2026-07-28 request, its protocol version), and returns
// the error to answer instead of forwarding msgs when they claim another
// agent, initialize again or declare another protocol version.
func (r *relay) admit(msgs []*intercept.Message) error {
	c, err := r.ident.identify(r.opened, msgs)
	if err != nil || !c.requests {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.started, r.owner, r.handshake = true, c.principal(), c.initialize
		if c.version != "" {
			r.version = c.version
		}
		return nil
	}
	switch {
	case !r.owner.admits(c):
		err = otherAgent(r.owner)
	case c.initialize && !r.handshake:
		// A client whose 2026-07-28 requests the server did not know
		// falls back to the handshake on the same connection (mcp-go
		// probes with server/discover): once, as the same agent, and the
		// version becomes the one the handshake negotiates.
		r.handshake, r.version = true, ""
	default:
		err = c.continues(r.version)
	}
	if err != nil {
		refusals{r.log, r.onRefused}.refused(r.kind, r.up.Name, r.session, r.owner, c, err)
	}
	return err
}

func (r *relay) upstreamToClient(ctx context.Context) error {
	p := intercept.PrincipalFrom(ctx)
	for {
		b, err := r.upc.Read(ctx)
		if err != nil {
			err = r.withheld.readFailed(err)
			r.failPending(ctx, err)
			return fmt.Errorf("upstream %s: %w", r.up.Name, err)
		}
		if err := p.Gone(); err != nil {
			r.lapsed(ctx, err)
			return err // ends the connection
		}
		r.lastActive.Store(time.Now().UnixNano())
		raw := r.ids.restore(b)
		b, answers, err := r.received(raw)
		if err != nil {
			// JSON-RPC the client could read otherwise than the gateway (an
			// id spelled 7.0, which a client pairs with its request 7): an
			// answer nothing here screened goes nowhere, as on the bridge.
			r.withheld.unreadable(&r.drops, r.up.Name, err)
			if err := r.refuseLists(ctx, raw, err); err != nil {
				return err
			}
			continue
		}
		if b == nil {
			continue // only results for requests not waiting
		}
		shown := r.hideTools(ctx, b)
		// A task handle among answers is recorded: what was held about
		// its task goes first, in the order the upstream sent it.
		r.tasks.settle(r.doneCreating(answers))
		if shown == nil {
			r.observe(answers) // all of it was about another's task
			continue
		}
		if err := r.toClient(ctx, shown); err != nil {
			if _, ok := errors.AsType[*transport.MessageError](err); ok {
				// Not JSON, so it cannot be framed for the client.
				r.log.Warn("message from upstream is not JSON; not delivered", "upstream", r.up.Name, "err", err)
				continue
			}
			return err
		}
		r.observe(answers)
	}
}

// received looks at a message from the upstream before it is passed on
// and returns it as it goes on, with the responses in it. The upstream
// calls they answer end now, an initialize result sets the protocol
// version and a tools/list result is recorded before the client, having
// it, can send a request that the version or the list describes. A
// message that does not decode is an error: it is not passed on. Nor is a
// result for a request the gateway did not send or no longer waits for
// (one it holds for approval, denied, answered already): the client
// would take it by its id for the answer to its request, unscreened (nil
// when nothing else is left).
func (r *relay) received(b []byte) ([]byte, []*intercept.Message, error) {
	msgs, batch, err := intercept.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	if kept := r.withoutStray(msgs); len(kept) < len(msgs) {
		for range len(msgs) - len(kept) {
			r.withheld.stray(&r.drops, r.up.Name)
		}
		switch {
		case len(kept) == 0:
			return nil, nil, nil
		case batch:
			raws := make([]jsontext.Value, len(kept))
			for i, m := range kept {
				raws[i] = m.Raw
			}
			b = marshalArray(raws)
		default:
			b = kept[0].Raw
		}
		msgs = kept
	}
	answers := make([]*intercept.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Kind == intercept.KindRequest {
			r.asked.add(m.IDKey())
		}
		if m.Kind != intercept.KindResponse && m.Kind != intercept.KindError {
			continue
		}
		answers = append(answers, m)
		r.mu.Lock()
		method, cursor := r.pending[m.IDKey()], r.cursors[m.IDKey()]
		caps, ok := r.listCaps[m.IDKey()]
		if !ok {
			caps = r.clientCaps
		}
		if m.Kind == intercept.KindResponse && method == "initialize" {
			r.version = protocolVersionFromResult(m.Result)
		}
		r.mu.Unlock()
		if m.Kind == intercept.KindResponse && method == "tools/list" {
			// Recorded before the client has it: a call it makes on
			// seeing the list is decided with the list.
			r.ic.ObserveToolsPageWith(r.up.Name, m.Result, cursor, caps)
		}
		r.endUpCall(m.IDKey(), responseError(m))
	}
	return b, answers, nil
}

// withoutStray returns msgs without the results whose ids no request
// sent to the upstream waits for (msgs itself when there is none).
func (r *relay) withoutStray(msgs []*intercept.Message) []*intercept.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kept []*intercept.Message
	for i, m := range msgs {
		_, waits := r.pending[m.IDKey()]
		if !waits && m.Kind == intercept.KindResponse {
			if j := slices.Index(r.cancels, m.IDKey()); j >= 0 {
				r.cancels, waits = slices.Delete(r.cancels, j, j+1), true
			}
		}
		stray := m.Kind == intercept.KindResponse && !waits
		switch {
		case stray && kept == nil:
			kept = append(make([]*intercept.Message, 0, len(msgs)), msgs[:i]...)
		case !stray && kept != nil:
			kept = append(kept, m)
		}
	}
	if kept == nil {
		return msgs
	}
	return kept
}

// observe looks at the responses from the upstream after they were
// passed on.
func (r *relay) observe(answers []*intercept.Message) {
	for _, m := range answers {
		r.mu.Lock()
		method, ok := r.pending[m.IDKey()]
		r.forget(m.IDKey())
		r.mu.Unlock()
		r.endSpan(m.IDKey(), responseError(m))
		switch {
		case !ok || m.Kind != intercept.KindResponse:
		case intercept.ActionMethod(method):
			r.ic.ObserveResult(r.callContext(), m.IDKey(), m.Result)
		case intercept.ShowsTask(method):
			r.ic.ObserveTaskResult(r.callContext(), method, m.Result)
		}
	}
}

// refuseLists answers the list requests waiting on the upstream with an
// error when b, from it, cannot be decoded (err) and may hold a result:
// it may have been the answer to one, and had it been passed on, a client
// reading it its own way could have been shown tools the gateway never
// saw; dropped, it left the request waiting for ever. A line that names
// no result (a server logging to stdout) leaves them, and so does a list
// the client cancelled. The error is the client's connection's.
func (r *relay) refuseLists(ctx context.Context, b []byte, err error) error {
	if !mayHoldMemberFold(b, resultMember) {
		return nil
	}
	type list struct{ id, method string }
	var lists []list
	r.mu.Lock()
	for id, m := range r.pending {
		if listMethod(m) && !slices.Contains(r.cancelledLists, id) {
			lists = append(lists, list{id, m})
			r.forget(id)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(lists, func(a, b list) int { return strings.Compare(a.id, b.id) })
	why := fmt.Errorf("the upstream sent a message while it was pending that is not valid JSON-RPC (%v)", err)
	for _, l := range lists {
		r.endUpCall(l.id, why)
		r.endSpan(l.id, why)
		if err := r.toClient(ctx, listRefused(jsontext.Value(l.id), l.method, why)); err != nil {
			return err
		}
	}
	return nil
}

// failPending answers every request still waiting on the upstream with an
// error naming it, so no client call hangs when an upstream dies; their
// spans and measurements end with cause.
func (r *relay) failPending(ctx context.Context, cause error) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	clear(r.pending)
	r.cancelledLists = r.cancelledLists[:0]
	clear(r.cursors)
	clear(r.listCaps)
	r.pendingBytes = 0
	for id, n := range r.held {
		delete(r.held, id)
		r.budget.release(r.budgetKey, n)
	}
	n := len(r.creating)
	clear(r.creating)
	r.mu.Unlock()
	r.tasks.settle(n)
	for _, id := range ids {
		r.endUpCall(id, cause)
		_ = r.toClient(ctx, intercept.ErrorResponse(jsontext.Value(id), upstreamError(r.up.Name, cause)))
		r.endSpan(id, cause)
	}
}

// Bounds on the requests a connection has waiting on the upstream: past
// either, its further requests are answered with an error, not sent.
const (
	maxConnPending      = 1024
	maxConnPendingBytes = 4 << 20
)

// forget drops request id from pending, giving back the room it held;
// r.mu is held.
func (r *relay) forget(id string) {
	if m, ok := r.pending[id]; ok {
		r.pendingBytes -= len(id) + len(m)
		delete(r.pending, id)
		delete(r.swapped, id)
		if len(r.cancelledLists) > 0 {
			if i := slices.Index(r.cancelledLists, id); i >= 0 {
				r.cancelledLists = slices.Delete(r.cancelledLists, i, i+1)
			}
		}
	}
	if c, ok := r.cursors[id]; ok {
		r.pendingBytes -= len(c)
		delete(r.cursors, id)
	}
	if c, ok := r.listCaps[id]; ok {
		r.pendingBytes -= len(c)
		delete(r.listCaps, id)
	}
	if n, ok := r.held[id]; ok {
		delete(r.held, id)
		r.budget.release(r.budgetKey, n)
	}
}

// hold takes n bytes of the budget for msgs, about to be forwarded, when
// they hold a request: kept by the first request until it is answered
// (or forgotten), waited for as a POST waits for room.
func (r *relay) hold(ctx context.Context, msgs []*intercept.Message, n int64) error {
	if r.budget == nil {
		return nil
	}
	// The room a /ws message took while it was read is this room now.
	releaseMessage(r.down)
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		if err := r.budget.acquireWithin(ctx, r.budgetKey, n, bodyWait); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return r.budget.full().wire()
		}
		r.mu.Lock()
		r.held[m.IDKey()] += n
		r.mu.Unlock()
		return nil
	}
	return nil
}

// releaseMessage has c give back the room its last message holds in the
// body budget, if it holds any (a /ws connection: transport.AcceptWS), for
// its reader to hold the message there itself.
func releaseMessage(c transport.Conn) {
	if rm, ok := c.(interface{ ReleaseMessage() }); ok {
		rm.ReleaseMessage()
	}
}

// releaseHeld gives back the room of every request still held.
func (r *relay) releaseHeld() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, n := range r.held {
		delete(r.held, id)
		r.budget.release(r.budgetKey, n)
	}
}

// roomFor returns why the requests among msgs cannot wait on the upstream
// beside those already waiting, or nil.
func (r *relay) roomFor(msgs []*intercept.Message) error {
	n, size := 0, 0
	for _, m := range msgs {
		if m.Kind == intercept.KindRequest {
			n++
			size += len(m.IDKey()) + len(m.Method) + len(listCursors([]*intercept.Message{m})[m.IDKey()])
		}
	}
	if n == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		if _, ok := r.pending[m.IDKey()]; ok && m.Kind == intercept.KindRequest {
			return reusedIDError(m.IDKey(), r.up.Name)
		}
	}
	if len(r.pending)-len(r.cancelledLists)+n > maxConnPending || r.pendingBytes+size > maxConnPendingBytes {
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: not sent: this connection already has %d requests (%d bytes of ids) waiting on upstream %q, the most it may; send more as they are answered",
			len(r.pending), r.pendingBytes, r.up.Name)}
	}
	return nil
}

// refuse answers the requests among msgs, which were not sent, with an
// internal error, and forgets them.
func (r *relay) refuse(ctx context.Context, msgs []*intercept.Message, cause error) {
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		r.mu.Lock()
		r.forget(m.IDKey())
		r.mu.Unlock()
		r.tasks.settle(r.doneCreating([]*intercept.Message{m}))
		r.endUpCall(m.IDKey(), cause)
		r.endSpan(m.IDKey(), cause)
		_ = r.toClient(ctx, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeInternalError, Message: "message not sent: " + cause.Error()}))
	}
}

// upstreamError is the error a client gets for an upstream that failed;
// the upstream's URL in it is redacted (see redactURLs).
func upstreamError(name string, cause error) error {
	return &intercept.WireError{Code: intercept.CodeUpstreamError, Message: fmt.Sprintf("upstream %q is unavailable: %s", name, redactURLs(cause))}
}

// checkBatch decides about every element of a batch. It returns nil when
// the batch may be forwarded whole (see intercept.Interceptor.CheckBatch),
// or the reply to send instead. Batches exist only in MCP 2025-03-26.
func checkBatch(ctx context.Context, ic *intercept.Interceptor, msgs []*intercept.Message, cc intercept.CallContext) []byte {
	if !batchesAllowed(cc.ProtocolVersion) {
		return intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: JSON-RPC batches are not part of MCP %s", orUnknown(cc.ProtocolVersion))})
	}
	if reply, ok := ic.CheckBatch(ctx, msgs, cc); !ok {
		return reply
	}
	return nil
}

// batchesAllowed reports whether a protocol version has JSON-RPC batches:
// only 2025-03-26 does; 2025-06-18 removed them. An unknown version gets
// none, so a batch can never be the way around the decision point.
func batchesAllowed(version string) bool { return version == "2025-03-26" }

func orUnknown(v string) string {
	if v == "" {
		return "(version not negotiated)"
	}
	return v
}

func clientNameFromInitialize(params jsontext.Value) string {
	var p struct {
		ClientInfo struct {
			Name string `json:"name"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(params, &p)
	return p.ClientInfo.Name
}

func protocolVersionFromResult(result jsontext.Value) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &p)
	return p.ProtocolVersion
}

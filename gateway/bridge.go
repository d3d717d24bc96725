package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// bridgeState serves one downstream Streamable HTTP session from an
// upstream that is not HTTP (stdio, SSE, WebSocket): the gateway speaks
// Streamable HTTP to the client and the upstream's own transport upstream.
// Responses go back on the POST that carried their request; messages the
// server starts go to the newest open POST stream, else the GET stream,
// else wait in a bounded backlog for the next stream to open.
type bridgeState struct {
	up   transport.Conn
	wmu  writeLock // one writer at a time on up: POSTs arrive concurrently
	name string
	done chan struct{} // closed when the upstream reader ends
	// refusals sends up the gateway's answers to its withheld requests
	// (upstreamasks.go).
	refusals askRefusals
	// tasks holds the messages about tasks not yet known while the
	// session's task-augmented requests wait (taskhold.go), released
	// through sink.
	tasks *taskHold
	sink  *bridgeSink
	// ids are the requests sent under the gateway's ids while the
	// upstream was closed to the client (ids.go).
	ids idTable
	// drops rate-limits the log of results not delivered (stray).
	drops dropLog

	mu      sync.Mutex // guards the fields below
	waiters map[string]*stream
	calls   map[string]bridgeCall // request id -> what it was, for observation and hiding tools
	// orphans are the requests whose POST stream ended unanswered (its
	// client went away, or its connection broke), at most maxOrphans,
	// the oldest forgotten first (orphanOrder): a late answer to one is
	// screened as what it answers and goes to the GET stream, where a
	// client still waiting takes it by its id. A result under any other
	// id no request waits for is not delivered.
	orphans     map[string]orphanCall
	orphanOrder []orphanKey
	orphanSeq   uint64
	// cc is the call context of the session's latest request: whose the
	// messages no request waits for are (tasks of others are withheld).
	cc      intercept.CallContext
	streams []*stream // open POST streams, oldest first
	get     *stream
	// open is every stream of the session not released yet, listed or
	// not (a POST stream is unlisted as its last answer is routed, before
	// that answer is delivered): close gives up all of them.
	open    map[*stream]struct{}
	backlog [][]byte
	// backlogBytes is the size of backlog, counted in overflow; dropped
	// counts the messages given up to keep it within its bounds,
	// reported when a stream takes the backlog. ended: close has run,
	// and nothing more waits in the backlog.
	backlogBytes int
	dropped      int
	closed       bool
	ended        bool
	// handing is what was handed on (handOn) to a stream that had no
	// room for it at once, in order, for handPump to deliver; within the
	// backlog's bounds and counted in overflow, the oldest given up past
	// either (counted in dropped). handPumping: handPump runs, and
	// whatever is handed on waits behind it.
	handing      [][]byte
	handingBytes int
	handPumping  bool
	handed       chan struct{} // closed when handPump ends; nil while it does not run
	// overflow counts handing and the backlog with what other sessions
	// and streams hold for clients that do not read; nil: the process's
	// (processOverflow).
	// Set before the session is used.
	overflow *overflowBudget
}

// The backlog's bounds: the oldest messages go first past either. The
// newest message is always kept, so one larger than maxBacklogBytes (up
// to max_answer_bytes, the bound of every upstream message) still waits
// alone for a stream.
const (
	maxBacklog      = 1024
	maxBacklogBytes = 16 << 20
)

// maxOrphans bounds a bridged session's orphans.
const maxOrphans = 64

// orphanCall is a request its POST stream ended without answering; seq
// tells it from an earlier one under the same id in orphanOrder.
type orphanCall struct {
	bridgeCall
	seq uint64
}

type orphanKey struct {
	id  string
	seq uint64
}

// bridgeCall is a request waiting for its response on a bridged session.
type bridgeCall struct {
	method  string
	cursor  string // of a tools/list asked with one (intercept.ListCursor)
	creates bool   // a task-augmented request: tasks expects its answer
	// asIs: sent under the client's id, the upstream not being closed to
	// the client then (bridgeState.sentAsIs).
	asIs bool
	cc   intercept.CallContext // the request's, for hiding tools in its answer
	up   *upCall               // its measurement; nil: none
}

// stream is one open HTTP response the bridge writes messages to.
type stream struct {
	ch       chan []byte
	gone     chan struct{} // closed when the client went away
	goneOnce sync.Once

	// What offer could not put in ch at once, in order, for pump to
	// deliver: bounded by maxOverflow bytes, past which notifications
	// are dropped (the final answer is always kept).
	omu           sync.Mutex
	overflow      [][]byte
	overflowBytes int
	pumping       bool
}

// maxOverflow bounds the messages a stream holds beyond its channel, and
// maxOverflowTotal those all streams of the process hold with what
// bridged sessions hand on (bridgeState.handing): clients that do not read
// cannot make the gateway hold more than that of notifications however
// many they are (the dropped ones are counted and logged per call).
const (
	maxOverflow      = 4 << 20
	maxOverflowTotal = 32 << 20
)

// overflowBudget counts what the gateway holds for clients that do not
// read, past their streams' channels: every stream's overflow, and what a
// bridged session hands on (handing). Safe for concurrent use.
type overflowBudget struct {
	max  int64 // the bound: what is not a final answer is dropped past it
	held atomic.Int64
}

// processOverflow is the process's overflowBudget, bounded by
// maxOverflowTotal.
var processOverflow = overflowBudget{max: maxOverflowTotal}

func newStream() *stream { return &stream{ch: make(chan []byte, 16), gone: make(chan struct{})} }

// deliver hands msg to s, waiting while its client reads, and reports
// whether s took it: not if its client has gone.
func (s *stream) deliver(msg []byte) bool {
	select {
	case <-s.gone:
		return false
	default:
	}
	select {
	case s.ch <- msg:
		return true
	case <-s.gone:
		return false
	}
}

// offer hands msg to s without ever blocking the caller (the reader of
// a connection that serves other clients too): what the channel has no
// room for waits in the stream's overflow, delivered in order by a
// goroutine of its own; a notification past maxOverflow bytes of it is
// dropped (false), a final answer never.
func (s *stream) offer(msg []byte, final bool) bool {
	s.omu.Lock()
	defer s.omu.Unlock()
	if len(s.overflow) == 0 {
		select {
		case s.ch <- msg:
			return true
		case <-s.gone:
			return true
		default:
		}
	}
	if !final && (s.overflowBytes+len(msg) > maxOverflow || processOverflow.held.Load()+int64(len(msg)) > processOverflow.max) {
		return false
	}
	s.overflow = append(s.overflow, msg)
	s.overflowBytes += len(msg)
	processOverflow.held.Add(int64(len(msg)))
	if !s.pumping {
		s.pumping = true
		go s.pump()
	}
	return true
}

// pump delivers the overflow in order, waiting for the client as deliver
// does, until it is empty.
func (s *stream) pump() {
	for {
		s.omu.Lock()
		if len(s.overflow) == 0 {
			s.pumping = false
			s.omu.Unlock()
			return
		}
		msg := s.overflow[0]
		s.overflow[0] = nil
		s.overflow = s.overflow[1:]
		s.overflowBytes -= len(msg)
		processOverflow.held.Add(-int64(len(msg)))
		s.omu.Unlock()
		s.deliver(msg)
	}
}

func (b *bridgeState) readLoop(g *Gateway, rt *route, sess *session) {
	defer close(b.done)
	ctx := context.Background()
	var drops dropLog
	for {
		msg, err := b.up.Read(ctx)
		if err != nil {
			b.fail(g.withheld.readFailed(err))
			return
		}
		for _, one := range batchElements(msg) {
			m, call := b.route(ctx, g.ic, g.withheld, sess, one)
			switch method := call.method; {
			case m == nil:
				_, _, err := intercept.Decode(one)
				g.withheld.unreadable(&drops, rt.up.Name, err)
			case m.Kind != intercept.KindResponse:
			case intercept.ActionMethod(method):
				g.ic.ObserveResult(call.cc, m.IDKey(), m.Result)
			case intercept.ShowsTask(method):
				g.ic.ObserveTaskResult(call.cc, method, m.Result)
			}
		}
	}
}

// batchElements splits a JSON-RPC batch array an upstream sent (its
// answer to a 2025-03-26 batch) into its messages, so each response goes
// to the request that waits for it; anything else is one message.
func batchElements(msg []byte) [][]byte {
	if i := bytes.IndexFunc(msg, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i < 0 || msg[i] != '[' {
		return [][]byte{msg}
	}
	msgs, _, err := intercept.Decode(msg)
	if err != nil {
		return [][]byte{msg}
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

// route delivers one upstream message to the stream that should carry it
// and returns it decoded, with the method of the request it answers; a
// message it cannot decode is delivered nowhere, and route returns nil. A
// tools/list result is delivered with the tools hidden that ic says the
// requesting agent can never call; a message about a task the session's
// client does not own is not delivered (w). The upstream call a response answers
// ends, an initialize result sets sess's protocol version, and a
// tools/list result is recorded (ic.ObserveToolsPage), before the client has
// the response.
func (b *bridgeState) route(ctx context.Context, ic *intercept.Interceptor, w *withheldTasks, sess *session, msg []byte) (*intercept.Message, bridgeCall) {
	msg = b.ids.restore(msg)
	m, err := intercept.DecodeMessage(msg)
	if err != nil {
		// Not JSON (a server logging to stdout), or JSON-RPC the client
		// could read otherwise than the gateway (an id spelled 7.0, which
		// a client pairs with its request 7): it answers nothing the
		// gateway can screen, so it goes nowhere.
		b.refuseLists(msg, err)
		return nil, bridgeCall{}
	}
	var target *stream
	var call bridgeCall
	late := false
	b.mu.Lock()
	if m.Kind == intercept.KindResponse || m.Kind == intercept.KindError {
		if s := b.waiters[m.IDKey()]; s != nil {
			target, call = s, b.calls[m.IDKey()]
			delete(b.waiters, m.IDKey())
			delete(b.calls, m.IDKey())
			if !b.owes(s) && !call.creates {
				// Its last answer ends the stream: what comes after
				// it (a stdio server's notification written after
				// the answer) goes to a stream still open, else the
				// GET stream or the backlog, not to one its client
				// stops reading at this answer. (A task handle's
				// stream stays listed until what was held about the
				// task has gone before it, below.)
				b.unlist(s)
			}
		} else if c, ok := b.orphans[m.IDKey()]; ok {
			call, late = c.bridgeCall, true
			delete(b.orphans, m.IDKey())
		} else if m.Kind == intercept.KindResponse {
			// A client takes a result by its id, whatever stream it
			// comes on: under the id of a call held for approval, or
			// of one answered already, it would be taken unscreened
			// for what the upstream was never asked or answered.
			b.mu.Unlock()
			w.stray(&b.drops, b.name)
			return m, bridgeCall{}
		}
	}
	answered, cc := target != nil, b.cc
	b.mu.Unlock()
	// Before a message about a task not yet the client's is held: it
	// would be released unscreened.
	if m.Kind == intercept.KindRequest || m.Kind == intercept.KindNotification {
		withheld, instead := withholdUpstreamMessage(ic, cc, m, func(_ *intercept.Message, answer []byte) {
			b.refusals.send(w.log, b.name, func() {
				ctx, stop := context.WithTimeout(ctx, cancelWriteTimeout)
				defer stop()
				_ = b.write(ctx, answer)
			})
		})
		if withheld && instead == nil {
			return m, call
		}
		if withheld {
			msg = instead
		}
	}
	if out, changed := screenUpdate(ctx, ic, w, cc, m, msg); changed {
		if out == nil {
			return m, call
		}
		msg = out
	}
	if target == nil && ic.ForeignTask(ctx, cc, m) {
		held, owned := b.tasks.hold(ctx, cc, m, msg, b.sink)
		if !owned {
			if !held {
				w.drop(cc, m)
			}
			return m, call
		}
	}
	if answered || late {
		call.up.end(responseError(m))
		if call.method == "initialize" && m.Kind == intercept.KindResponse {
			sess.setVersion(protocolVersionFromResult(m.Result))
		}
		if call.method == "tools/list" && m.Kind == intercept.KindResponse {
			ic.ObserveToolsPageWith(call.cc.Upstream, m.Result, call.cursor, call.cc.ClientCapabilities)
		}
		if m.Kind == intercept.KindResponse && screened(ic, call.method, msg) {
			if out, changed := screenAnswer(ctx, ic, call.cc, call.method, call.cursor, m.ID, m.IDKey(), m.Raw, m.Result); changed {
				msg = out
			}
		}
		if m.Kind == intercept.KindError {
			if out, changed := screenError(ic, call.cc, call.method, m.ID, m.IDKey(), m.Raw, m.Error); changed {
				msg = out
			}
		}
	} else if m.Kind == intercept.KindError {
		// Answering no call, it goes to the GET stream, where a client
		// takes it by its id (a call held for approval's).
		if out, changed := screenError(ic, cc, "", m.ID, m.IDKey(), m.Raw, m.Error); changed {
			msg = out
		}
	}
	// What was handed on before (handPump) goes first: delivered now, msg
	// would take the first room a stream it waits for makes, or reach
	// the backlog, ahead of what the upstream sent before it. Not an
	// answer to a request waiting on its own stream: a GET stream its
	// client does not read must not hold the answers to its calls.
	if !answered {
		b.awaitHanded()
	}
	if target == nil {
		b.mu.Lock()
		if m.Kind == intercept.KindResponse || m.Kind == intercept.KindError {
			// Never on the stream of another request: its POST would
			// end with this for its answer, and its own would be lost.
			target = b.getTarget(msg)
		} else {
			target = b.serverTarget(msg)
		}
		b.mu.Unlock()
	}
	if m.Kind == intercept.KindRequest {
		// Delivered now or from the backlog: its client may answer it.
		sess.askedUp.add(m.IDKey())
	}
	if target != nil {
		if answered && call.creates {
			// Its handle is recorded: what was held about the task goes
			// first, in the order the upstream sent it (what a stream
			// had no room for at once is taken before the answer goes).
			b.tasks.settle(1)
			b.awaitHanded()
			b.mu.Lock()
			if !b.owes(target) {
				b.unlist(target)
			}
			b.mu.Unlock()
		}
		b.deliverTo(target, msg)
	}
	return m, call
}

// refuseLists answers the list requests waiting on their POST streams
// with an error when msg, from the upstream, cannot be decoded (err) and
// may hold a result: it may have been the answer to one, and had it been
// passed on, a client reading it its own way could have been shown tools
// the gateway never saw; dropped, it left the request waiting for ever.
// A line that names no result (a server logging to stdout) leaves them.
func (b *bridgeState) refuseLists(msg []byte, err error) {
	if !mayHoldMemberFold(msg, resultMember) {
		return
	}
	type refusal struct {
		s   *stream
		msg []byte
	}
	var out []refusal
	b.mu.Lock()
	for id, call := range b.calls {
		s := b.waiters[id]
		if s == nil || !listMethod(call.method) {
			continue
		}
		delete(b.waiters, id)
		delete(b.calls, id)
		if !b.owes(s) {
			b.unlist(s)
		}
		why := fmt.Errorf("the upstream sent a message while it was pending that is not valid JSON-RPC (%v)", err)
		call.up.end(why)
		out = append(out, refusal{s, listRefused(jsontext.Value(id), call.method, why)})
	}
	b.mu.Unlock()
	for _, r := range out {
		b.deliverTo(r.s, r.msg)
	}
}

// deliverTo hands msg to s, or on (handOn) if its client has left; what
// reached s as its client left is handed on too (reclaim).
func (b *bridgeState) deliverTo(s *stream, msg []byte) {
	if !s.deliver(msg) {
		b.handOn(s, msg)
		return
	}
	select {
	case <-s.gone:
		b.reclaim(s)
	default:
	}
}

// handOn delivers msg, which the client of from left without taking, as
// if from had not been open: a response to the GET stream (as a late
// answer to an orphan goes, for the client to take by its id), anything
// else (a request of the upstream's, which waits for its answer; a
// notification) to another POST stream or the GET stream; with neither,
// to the backlog the next GET stream takes, within its bounds. What was
// written to a connection its client closed cannot be recalled; nothing
// the gateway still holds is lost uncounted.
//
// handOn never waits for a client: it runs in release, as the handler of
// the stream whose client left returns, and that handler must not wait
// on another client (a GET stream open but not read), nor keep the
// server's Close or Shutdown waiting for it. What the stream it goes to
// has no room for at once waits in b.handing, in order, for handPump.
func (b *bridgeState) handOn(from *stream, msg []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handOnLocked(from, msg)
}

// handOnLocked is handOn with b.mu held.
func (b *bridgeState) handOnLocked(from *stream, msg []byte) {
	b.forget(from)
	if !b.handPumping && b.handNow(msg) {
		return
	}
	// Counted with what every client that does not read makes the
	// gateway hold: else sessions each with a GET stream open but not
	// read would hold up to maxBacklogBytes each, however many they are.
	// As the backlog does, the newest is kept past the bounds.
	budget := b.budget()
	b.handing = append(b.handing, msg)
	b.handingBytes += len(msg)
	budget.held.Add(int64(len(msg)))
	for len(b.handing) > 1 && (len(b.handing) > maxBacklog || b.handingBytes > maxBacklogBytes || budget.held.Load() > budget.max) {
		b.handingBytes -= len(b.handing[0])
		budget.held.Add(-int64(len(b.handing[0])))
		b.handing[0] = nil
		b.handing = b.handing[1:]
		b.dropped++
	}
	if !b.handPumping {
		b.handPumping, b.handed = true, make(chan struct{})
		go b.handPump()
	}
}

// budget returns what handing is counted in.
func (b *bridgeState) budget() *overflowBudget {
	if b.overflow != nil {
		return b.overflow
	}
	return &processOverflow
}

// awaitHanded waits until what was handed on has been taken (handPump),
// for as long as the streams it goes to are open: on the upstream's
// reader only, which waits for its clients anyway.
func (b *bridgeState) awaitHanded() {
	b.mu.Lock()
	handed := b.handed
	b.mu.Unlock()
	if handed != nil {
		<-handed
	}
}

// handTarget returns the stream a message handed on goes to; nil: it
// waits in the backlog. b.mu is held.
func (b *bridgeState) handTarget(msg []byte) *stream {
	if isResponse(msg) {
		return b.getTarget(msg)
	}
	return b.serverTarget(msg)
}

// handNow hands msg on if the stream it goes to takes it at once (or it
// waits in the backlog), and reports whether it did. b.mu is held.
func (b *bridgeState) handNow(msg []byte) bool {
	for {
		to := b.handTarget(msg)
		if to == nil {
			return true
		}
		select {
		case <-to.gone:
			b.forget(to)
			continue
		default:
		}
		select {
		case to.ch <- msg:
		default:
			return false
		}
		select {
		case <-to.gone:
			// Its client left as msg reached it: release may have
			// reclaimed its channel already.
			b.reclaimLocked(to)
		default:
		}
		return true
	}
}

// handPump delivers what waits in b.handing, in order, waiting for the
// clients it goes to as the upstream's reader does: for as long as the
// stream it goes to is open (every one is given up when the session
// ends, see close), not for any handler.
func (b *bridgeState) handPump() {
	for {
		b.mu.Lock()
		if len(b.handing) == 0 {
			b.handing, b.handingBytes, b.handPumping = nil, 0, false
			close(b.handed)
			b.handed = nil
			b.mu.Unlock()
			return
		}
		msg := b.handing[0]
		b.handing[0] = nil
		b.handing = b.handing[1:]
		b.handingBytes -= len(msg)
		b.budget().held.Add(-int64(len(msg)))
		for {
			to := b.handTarget(msg)
			if to == nil {
				break
			}
			b.mu.Unlock()
			ok := to.deliver(msg)
			b.mu.Lock()
			if !ok {
				b.forget(to)
				continue
			}
			select {
			case <-to.gone:
				b.reclaimLocked(to)
			default:
			}
			break
		}
		b.mu.Unlock()
	}
}

// forget takes s, whose client has left, out of the streams that take
// messages; b.mu is held.
func (b *bridgeState) forget(s *stream) {
	b.unlist(s)
	if s != nil && b.get == s {
		b.get = nil
	}
}

// reclaim hands on what waits on s, whose client has left.
func (b *bridgeState) reclaim(s *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reclaimLocked(s)
}

// reclaimLocked is reclaim with b.mu held.
func (b *bridgeState) reclaimLocked(s *stream) {
	for {
		select {
		case msg := <-s.ch:
			b.handOnLocked(s, msg)
		default:
			return
		}
	}
}

// serverTarget returns the stream that takes msg, a message no request
// waits for: the newest POST stream, else the GET stream; with neither,
// msg waits in the backlog and serverTarget returns nil. b.mu is held.
func (b *bridgeState) serverTarget(msg []byte) *stream {
	if len(b.streams) > 0 {
		return b.streams[len(b.streams)-1]
	}
	return b.getTarget(msg)
}

// getTarget returns the GET stream to take msg; with none, msg waits in
// the backlog and getTarget returns nil. b.mu is held.
func (b *bridgeState) getTarget(msg []byte) *stream {
	if b.get != nil {
		return b.get
	}
	if b.ended {
		return nil // no stream will take it
	}
	// Counted as handing is (handOnLocked): else a client's sessions
	// that open no GET stream would hold maxBacklogBytes each.
	budget := b.budget()
	b.backlog = append(b.backlog, msg)
	b.backlogBytes += len(msg)
	budget.held.Add(int64(len(msg)))
	for len(b.backlog) > 1 && (len(b.backlog) > maxBacklog || b.backlogBytes > maxBacklogBytes || budget.held.Load() > budget.max) {
		b.backlogBytes -= len(b.backlog[0])
		budget.held.Add(-int64(len(b.backlog[0])))
		b.backlog[0] = nil
		b.backlog = b.backlog[1:]
		b.dropped++
	}
	return nil
}

// takeBacklog returns what waits in the backlog, and how many messages
// were dropped from it, and empties it.
func (b *bridgeState) takeBacklog() ([][]byte, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeBacklogLocked()
}

// takeBacklogLocked is takeBacklog with b.mu held.
func (b *bridgeState) takeBacklogLocked() ([][]byte, int) {
	backlog, dropped := b.backlog, b.dropped
	b.budget().held.Add(-int64(b.backlogBytes))
	b.backlog, b.backlogBytes, b.dropped = nil, 0, 0
	return backlog, dropped
}

// bridgeSink delivers a message held about a task as one no request
// waits for.
type bridgeSink struct{ b *bridgeState }

// It never waits for a client (handOn): taskHold.settle sends under its
// lock, from release and bridgePost too, on a handler's goroutine.
func (s *bridgeSink) send(msg []byte) error {
	s.b.handOn(nil, msg)
	return nil
}

// release forgets a stream: its client went away or got everything. The
// measurements of requests on it still unanswered end with cause; what
// waits on s that its client did not take goes on (handOn).
func (b *bridgeState) release(s *stream, ids []string, cause error) {
	s.goneOnce.Do(func() { close(s.gone) })
	var unanswered []*upCall
	creating := 0
	b.mu.Lock()
	for _, id := range ids {
		if b.waiters[id] == s {
			if b.calls[id].creates {
				creating++
			}
			unanswered = append(unanswered, b.calls[id].up)
			if cause == errCancelled { // sent, its stream gone: it may yet be answered
				b.orphan(id, b.calls[id])
			}
			delete(b.waiters, id)
			delete(b.calls, id)
		}
	}
	if b.get == s {
		b.get = nil
	}
	b.unlist(s)
	delete(b.open, s)
	b.mu.Unlock()
	for _, uc := range unanswered {
		uc.end(cause)
	}
	b.tasks.settle(creating)
	b.reclaim(s)
}

// opened notes s open on the session until its release; b.mu is held.
func (b *bridgeState) opened(s *stream) {
	if b.open == nil {
		b.open = make(map[*stream]struct{})
	}
	b.open[s] = struct{}{}
}

// owes reports whether a request still waits for its answer on s; b.mu
// is held.
func (b *bridgeState) owes(s *stream) bool {
	for _, w := range b.waiters {
		if w == s {
			return true
		}
	}
	return false
}

// unlist takes s out of the POST streams that take messages no request
// waits for; b.mu is held.
func (b *bridgeState) unlist(s *stream) {
	for i, o := range b.streams {
		if o == s {
			b.streams = append(b.streams[:i], b.streams[i+1:]...)
			return
		}
	}
}

// orphan keeps call, whose POST stream ended before its answer (see
// orphans), forgetting the oldest past maxOrphans; b.mu is held.
func (b *bridgeState) orphan(id string, call bridgeCall) {
	if b.orphans == nil {
		b.orphans = make(map[string]orphanCall)
	}
	call.creates = false // settled by release
	b.orphanSeq++
	b.orphans[id] = orphanCall{call, b.orphanSeq}
	b.orphanOrder = append(b.orphanOrder, orphanKey{id, b.orphanSeq})
	for len(b.orphanOrder) > maxOrphans {
		k := b.orphanOrder[0]
		b.orphanOrder = b.orphanOrder[1:]
		if c, ok := b.orphans[k.id]; ok && c.seq == k.seq {
			delete(b.orphans, k.id)
		}
	}
}

// fail answers every waiting request with an error naming the upstream
// and ends the measurements of every pending request with cause.
func (b *bridgeState) fail(cause error) {
	err := upstreamError(b.name, cause)
	b.mu.Lock()
	b.closed = true
	waiters, calls := b.waiters, b.calls
	b.waiters, b.calls = map[string]*stream{}, map[string]bridgeCall{}
	b.mu.Unlock()
	creating := 0
	for _, c := range calls {
		c.up.end(cause)
		if c.creates {
			creating++
		}
	}
	b.tasks.settle(creating)
	for id, s := range waiters {
		s.deliver(intercept.ErrorResponse([]byte(id), err))
	}
}

// close ends the upstream connection and waits for its reader. A client
// that stopped reading without going away would hold the reader (handing
// it a message) for as long as it keeps its connection: past closeGrace,
// every stream of the session is given up (open: an answered one too,
// which the reader or handPump may still be delivering to), so ending a
// session never waits on a client.
func (b *bridgeState) close() {
	_ = b.up.Close()
	defer func() {
		// No stream will take the backlog now: what it holds, and what
		// would wait in it from now on (handPump ending), is dropped.
		b.mu.Lock()
		b.ended = true
		b.takeBacklogLocked()
		b.mu.Unlock()
	}()
	select {
	case <-b.done:
		return
	case <-time.After(closeGrace):
	}
	b.mu.Lock()
	ss := append([]*stream(nil), b.streams...)
	for _, s := range b.waiters {
		ss = append(ss, s)
	}
	if b.get != nil {
		ss = append(ss, b.get)
	}
	for s := range b.open {
		ss = append(ss, s)
	}
	b.mu.Unlock()
	for _, s := range ss {
		s.goneOnce.Do(func() { close(s.gone) })
	}
	<-b.done
}

// closeGrace is how long ending a bridged session waits for its clients
// to take what its upstream said last.
const closeGrace = time.Second

// bridgePost sends an allowed POST to a bridged upstream and answers it:
// JSON when the first thing back is the only response owed, otherwise an
// SSE stream that ends when every request is answered.
func (g *Gateway) bridgePost(w http.ResponseWriter, r *http.Request, x *exchange) {
	if x.sess == nil && !x.batch && x.msgs[0].Method != "initialize" && isModern(x.version) {
		g.stateless[x.rt.up.Name].post(w, r, x)
		return
	}
	if x.sess == nil {
		if x.batch || x.msgs[0].Method != "initialize" {
			writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: "upstream " + x.rt.up.Name + " is reached over " + string(x.rt.up.Transport) + " and needs a session: send initialize first"})
			return
		}
		sess, err := g.openBridge(x)
		if err != nil {
			g.failExchange(w, x, err)
			return
		}
		x.sess = sess
		w.Header().Set(hdrSession, sess.id)
	}
	b := x.sess.bridge
	reqs := x.requests()
	closed := g.closedIDs(r.Context(), x)
	body, ucs, trace := g.startUpCalls(r.Context(), x, closed)
	var s *stream
	ids := make([]string, 0, len(reqs))
	var cancelled, replaced []*upCall
	replacedCreating := 0
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		for _, uc := range ucs {
			uc.end(transport.ErrClosed)
		}
		g.failExchange(w, x, transport.ErrClosed)
		return
	}
	for id := range reqs {
		if err := b.reusedLocked(id); err != nil {
			b.mu.Unlock()
			for _, uc := range ucs {
				uc.end(errReused)
			}
			writeJSONRPCError(w, http.StatusBadRequest, nil, err)
			return
		}
	}
	for _, m := range x.msgs {
		if id, ok := cancelledID(m); ok {
			cancelled = append(cancelled, b.calls[id].up)
		}
	}
	creating := creatingTasks(x.msgs)
	if len(reqs) > 0 {
		s = newStream()
		cc := x.callContext()
		cursors := x.cursors()
		for id, method := range reqs {
			if old, ok := b.calls[id]; ok {
				replaced = append(replaced, old.up)
				if old.creates {
					replacedCreating++
				}
			}
			b.waiters[id] = s
			b.calls[id] = bridgeCall{method: method, cursor: cursors[id], creates: creating[id], cc: cc, up: ucs[id], asIs: !closed}
			ids = append(ids, id)
		}
		b.cc = cc
		b.streams = append(b.streams, s)
		b.opened(s)
	}
	b.mu.Unlock()
	b.tasks.expect(len(creating))
	b.tasks.settle(replacedCreating)
	for _, uc := range cancelled {
		uc.end(errCancelled)
	}
	for _, uc := range replaced {
		uc.end(errReplaced)
	}

	var err error
	if closed {
		body, err = b.ids.send(body, x.batch, &x.sess.askedUp, trace)
	}
	if errors.Is(err, errNothingSent) {
		w.WriteHeader(http.StatusAccepted) // only a cancellation of nothing sent
		return
	}
	if err == nil {
		err = b.write(r.Context(), body)
	}
	if err != nil {
		if s != nil {
			b.release(s, ids, err)
		}
		g.failExchange(w, x, err)
		return
	}
	if s == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	defer b.release(s, ids, errCancelled)
	g.answer(w, r, s, len(ids), len(reqs) == 1 && !x.batch)
}

// reusedLocked refuses a request under id, which another still
// holds on the session: a request waiting for its answer, or an orphan,
// which the upstream may yet answer. The upstream answers by id, so the
// orphan's late answer would be taken as the new request's, screened and
// recorded as what it is not (a tools/list a policy hides tools of taken
// for a tools/call's answer, unscreened; one tool's result for
// another's), and the upstream would hold two requests under one id,
// which MCP forbids ("MUST NOT have been previously used by the requestor
// within the same session"). No SDK sends a request again under its id
// (they count ids up, and resume a broken stream with a GET), so none is
// taken over, not even one of the same method. b.mu is held.
func (b *bridgeState) reusedLocked(id string) error {
	if _, ok := b.calls[id]; ok {
		return reusedIDError(id, b.name)
	}
	if o, ok := b.orphans[id]; ok {
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: not sent: the %s with id %s, whose stream ended unanswered, may yet be answered by upstream %q; give each request its own id", o.method, id, b.name)}
	}
	return nil
}

// sentAsIs reports whether the request whose client id has key went to
// the upstream under that id and still waits (idTable.asIs).
func (b *bridgeState) sentAsIs(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.calls[key]
	return ok && c.asIs
}

func (b *bridgeState) write(ctx context.Context, msg []byte) error {
	if err := b.wmu.lock(ctx); err != nil {
		return err
	}
	defer b.wmu.unlock()
	return b.up.Write(ctx, msg)
}

// bridgeInto sends the single request of x, now allowed, to the session's
// bridged upstream and passes everything the upstream sends for it on
// through send, the SSE stream already open to the client, until its
// response.
func (g *Gateway) bridgeInto(r *http.Request, x *exchange, send func([]byte) error) {
	b := x.sess.bridge
	id := x.msgs[0].IDKey()
	closed := g.closedIDs(r.Context(), x)
	body, ucs, trace := g.startUpCalls(r.Context(), x, closed)
	s := newStream()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		ucs[id].end(transport.ErrClosed)
		_ = send(intercept.ErrorResponse(x.msgs[0].ID, upstreamError(x.rt.up.Name, transport.ErrClosed)))
		return
	}
	if err := b.reusedLocked(id); err != nil {
		b.mu.Unlock()
		ucs[id].end(errReused)
		_ = send(intercept.ErrorResponse(x.msgs[0].ID, err))
		return
	}
	old, replaced := b.calls[id]
	creates := createsTask(x.msgs[0])
	b.waiters[id] = s
	b.calls[id] = bridgeCall{method: x.msgs[0].Method, cursor: x.cursors()[id], creates: creates, cc: x.callContext(), up: ucs[id], asIs: !closed}
	b.cc = b.calls[id].cc
	b.streams = append(b.streams, s)
	b.opened(s)
	b.mu.Unlock()
	if creates {
		b.tasks.expect(1)
	}
	if replaced {
		old.up.end(errReplaced)
		if old.creates {
			b.tasks.settle(1)
		}
	}
	defer b.release(s, []string{id}, errCancelled)
	var err error
	if closed {
		body, err = b.ids.send(body, x.batch, &x.sess.askedUp, trace)
	}
	if err == nil {
		err = b.write(r.Context(), body)
	}
	if err != nil {
		b.release(s, []string{id}, err)
		_ = send(intercept.ErrorResponse(x.msgs[0].ID, upstreamError(x.rt.up.Name, err)))
		return
	}
	p := intercept.PrincipalFrom(r.Context())
	for {
		select {
		case <-r.Context().Done():
			return
		case msg := <-s.ch:
			if err := p.Gone(); err != nil {
				// As answer does: nothing more once the credential
				// stopped holding while the call ran.
				_ = send(intercept.ErrorResponse(x.msgs[0].ID, err))
				return
			}
			if send(msg) != nil || isResponse(msg) {
				return
			}
		}
	}
}

// answer writes what arrives on s to the client until all n responses
// owed on it have been written: as one JSON body when single and the first
// message is the response, else as an SSE stream, which a client taking
// one gets once nothing has come for bridgeStreamAfter.
// It reports whether all of them were written (false: the client left).
func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, s *stream, n int, single bool) bool {
	rc := http.NewResponseController(w)
	sse, got := false, 0
	p := intercept.PrincipalFrom(r.Context())
	startSSE := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		sse = true
	}
	var early <-chan time.Time
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		t := time.NewTimer(bridgeStreamAfter)
		defer t.Stop()
		early = t.C
	}
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return false
		case <-early:
			// Nothing yet: the stream starts now, as an HTTP server's
			// does at once, for a client that waits for its headers.
			early = nil
			if !sse {
				startSSE()
				if rc.Flush() != nil {
					return false
				}
			}
			continue
		case msg = <-s.ch:
		}
		if err := p.Gone(); err != nil {
			// Nothing more for a client whose credential stopped
			// holding while it waited: as for a client gone.
			msg = intercept.ErrorResponse(nil, err)
			if !sse {
				writeJSON(w, http.StatusOK, msg)
			} else {
				_ = g.writeSSEMessage(w, msg)
			}
			return false
		}
		resp := isResponse(msg)
		if resp {
			got++
		}
		if !sse {
			if single && resp {
				writeJSON(w, http.StatusOK, msg)
				return true
			}
			startSSE()
		}
		if g.writeSSEMessage(w, msg) != nil || rc.Flush() != nil {
			return false
		}
		if got == n {
			return true
		}
	}
}

// bridgeStreamAfter is how long an answer from a stdio upstream may wait
// for its first message before its event stream starts (its headers
// sent). Over HTTP a server starts its stream at once: a client may wait
// for the headers before it goes on (go-sdk's Connect waits on its
// subscriptions/listen), and a stdio server answering late and silent
// left it waiting for as long. An answer that comes sooner is still one
// JSON body.
const bridgeStreamAfter = time.Second

// writeSSEMessage writes msg to an SSE stream as a message event, compacted.
// A message that is not JSON (an upstream sent it) cannot be framed: it is
// dropped with a warning rather than ending the stream.
func (g *Gateway) writeSSEMessage(w io.Writer, msg []byte) error {
	err := transport.WriteSSEMessage(w, msg)
	if _, ok := errors.AsType[*transport.MessageError](err); ok {
		g.log.Warn("message is not JSON; not delivered", "err", err)
		return nil
	}
	return err
}

func isResponse(msg []byte) bool {
	m, err := intercept.DecodeMessage(msg)
	return err == nil && (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError)
}

// openBridge dials the upstream for a new session.
func (g *Gateway) openBridge(x *exchange) (*session, error) {
	l, err := g.takeLease(x)
	if err != nil {
		return nil, err
	}
	up, err := x.rt.dialSession(g.ctx, nil, x.agent)
	if err != nil {
		l.release()
		return nil, err
	}
	sess := &session{id: g.sessionID(sealedSession{Route: x.rt.up.Name, Header: x.owner.header, Agent: x.owner.agent, Client: x.owner.client}),
		route: x.rt.up.Name, owner: x.owner, version: x.version, elicitForm: x.initFormElicitation(),
		caps: bytes.Clone(sealableCaps(x.clientCapabilities())), lease: l} // not a slice holding the whole request (forward)
	sess.bridge = &bridgeState{up: up, name: x.rt.up.Name, done: make(chan struct{}),
		waiters: make(map[string]*stream), calls: make(map[string]bridgeCall), tasks: newTaskHold(g.ic, g.withheld)}
	sess.bridge.sink = &bridgeSink{sess.bridge}
	sess.bridge.ids.asIs = sess.bridge.sentAsIs
	if err := g.sessions.add(sess); err != nil {
		l.release()
		_ = up.Close()
		return nil, err
	}
	go sess.bridge.readLoop(g, x.rt, sess)
	return sess, nil
}

// bridgeGet opens the session's GET stream on a bridged route.
func (g *Gateway) bridgeGet(w http.ResponseWriter, r *http.Request, rt *route, sess *session) {
	if sess == nil {
		w.Header().Set("Allow", "POST")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "GET needs an " + hdrSession + " header"})
		return
	}
	b := sess.bridge
	s := newStream()
	b.mu.Lock()
	if b.get != nil || b.closed {
		b.mu.Unlock()
		writeJSONRPCError(w, http.StatusConflict, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "this session already has a GET stream"})
		return
	}
	b.get = s
	b.opened(s)
	backlog, dropped := b.takeBacklogLocked()
	b.mu.Unlock()
	if dropped > 0 {
		g.log.Warn("messages from the upstream were dropped while the session had no stream open to take them",
			"upstream", rt.up.Name, "dropped", dropped, "kept", len(backlog), "max_messages", maxBacklog, "max_bytes", maxBacklogBytes)
	}
	defer b.release(s, nil, nil)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for _, msg := range backlog {
		if g.writeSSEMessage(w, msg) != nil {
			return
		}
	}
	_ = rc.Flush()
	p := intercept.PrincipalFrom(r.Context())
	for {
		select {
		case <-r.Context().Done():
			return
		case <-b.done:
			return
		case <-g.drain.Done():
			return
		case msg := <-s.ch:
			if err := p.Gone(); err != nil {
				_ = g.writeSSEMessage(w, intercept.ErrorResponse(nil, err))
				return
			}
			if g.writeSSEMessage(w, msg) != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

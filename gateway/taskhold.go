package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// Messages about a task not yet known: a task that finishes at once may
// have its notifications/tasks/status (or a related-task message) sent
// before the task handle that makes it the client's: on the same POST's
// event stream (mcp-go drains what its session was told before it writes
// the answer), or on the GET stream while the answer is on its way.
// Withheld as another's, it would never reach its owner. So while a
// client has a task-augmented request (params.task) waiting for its
// answer, such a message from the client's upstream is held, not
// withheld: for the session (or the exchange, without one), at most
// maxHeldTasks messages and maxHeldTaskBytes, each for at most
// taskHoldFor. Once an answer is recorded, a held message whose task is
// now the client's is delivered where it arrived (on the answer's own
// stream, before the answer, as the upstream sent it); one that is not
// when nothing is awaited any more, past the deadline or the bounds, or
// whose stream has ended, is withheld and counted as before. A held
// message goes to the stream it came on or a stream of the same session:
// never to another client.

// Bounds on what a taskHold keeps.
const (
	maxHeldTasks     = 32
	maxHeldTaskBytes = 1 << 20
	taskHoldFor      = 5 * time.Second
)

var taskMember = []byte(`"task"`)

// createsTask reports whether m is a task-augmented request (2025-11-25:
// params.task an object), whose answer may be a task handle. Decode reads
// "t\u0061sk" as task, and so does the upstream: the quick look takes it.
func createsTask(m *intercept.Message) bool {
	return m.Kind == intercept.KindRequest && mayHoldMember(m.Params, taskMember) && intercept.Member(m.Params, "task").Kind() == '{'
}

// creatingTasks returns the ids of the task-augmented requests among
// msgs, nil for none.
func creatingTasks(msgs []*intercept.Message) map[string]bool {
	var out map[string]bool
	for _, m := range msgs {
		if createsTask(m) {
			if out == nil {
				out = make(map[string]bool, 1)
			}
			out[m.IDKey()] = true
		}
	}
	return out
}

// taskSink is where a held message goes once it is released.
type taskSink interface {
	send(msg []byte) error
}

// taskHold holds the messages about tasks not yet known that reached a
// client (a session, or one exchange) while its task-augmented requests
// await their answers. Its zero value is not ready: see newTaskHold; a
// nil taskHold holds nothing. Safe for concurrent use; it never writes to a sink while a caller of send on
// that sink holds the sink (lock order: taskHold, then sink).
type taskHold struct {
	ic *intercept.Interceptor
	w  *withheldTasks

	mu      sync.Mutex // guards the fields below
	waiting int        // task-augmented requests awaiting their answers
	held    []heldTask
	bytes   int
	timer   *time.Timer // drops what is past taskHoldFor; nil while nothing is held
}

type heldTask struct {
	ctx context.Context // of the stream it came on, without its cancellation: whose it is
	m   *intercept.Message
	msg []byte // what is delivered
	cc  intercept.CallContext
	to  taskSink
	at  time.Time
}

func newTaskHold(ic *intercept.Interceptor, w *withheldTasks) *taskHold {
	return &taskHold{ic: ic, w: w}
}

// expect notes n more task-augmented requests sent, awaiting answers.
func (h *taskHold) expect(n int) {
	if h == nil || n == 0 {
		return
	}
	h.mu.Lock()
	h.waiting += n
	h.mu.Unlock()
}

// hold keeps m (delivered as msg), from cc's upstream, about a task the
// client of cc did not own when it arrived, for to. owned: the task has
// become the client's meanwhile, m is to be delivered now; neither held
// nor owned: m is to be withheld (nothing is awaited, or the bounds are
// reached).
func (h *taskHold) hold(ctx context.Context, cc intercept.CallContext, m *intercept.Message, msg []byte, to taskSink) (held, owned bool) {
	if h == nil {
		return false, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Checked again under the lock: an answer recorded since is settled
	// either before (owned now) or after (it sees this message held).
	if !h.ic.ForeignTask(ctx, cc, m) {
		return false, true
	}
	if h.waiting <= 0 || len(h.held) >= maxHeldTasks || h.bytes+len(msg) > maxHeldTaskBytes {
		return false, false
	}
	h.held = append(h.held, heldTask{ctx: context.WithoutCancel(ctx), m: m, msg: msg, cc: cc, to: to, at: time.Now()})
	h.bytes += len(msg)
	if h.timer == nil {
		h.timer = time.AfterFunc(taskHoldFor, h.expire)
	}
	return true, false
}

// settle notes n of the awaited requests answered (their task handles
// recorded) or given up, and delivers each held message whose task is
// now its client's, in the order they came; when nothing is awaited any
// more, the rest are withheld.
func (h *taskHold) settle(n int) {
	if h == nil || n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting -= n
	if h.waiting < 0 {
		h.waiting = 0
	}
	if len(h.held) == 0 {
		return
	}
	kept := h.held[:0]
	for _, t := range h.held {
		switch {
		case !h.ic.ForeignTask(t.ctx, t.cc, t.m):
			if t.to.send(t.msg) != nil {
				h.w.drop(t.cc, t.m) // its stream is gone
			}
		case h.waiting == 0:
			h.w.drop(t.cc, t.m)
		default:
			kept = append(kept, t)
			continue
		}
		h.bytes -= len(t.msg)
	}
	h.keep(kept)
}

// forget withholds the messages held for to, whose stream ended.
func (h *taskHold) forget(to taskSink) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.held[:0]
	for _, t := range h.held {
		if t.to != to {
			kept = append(kept, t)
			continue
		}
		h.w.drop(t.cc, t.m)
		h.bytes -= len(t.msg)
	}
	h.keep(kept)
}

// expire withholds what was held for taskHoldFor.
func (h *taskHold) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timer = nil
	now := time.Now()
	kept := h.held[:0]
	for _, t := range h.held {
		if now.Sub(t.at) < taskHoldFor {
			kept = append(kept, t)
			continue
		}
		h.w.drop(t.cc, t.m)
		h.bytes -= len(t.msg)
	}
	h.keep(kept)
	if len(h.held) > 0 {
		h.timer = time.AfterFunc(taskHoldFor-now.Sub(h.held[0].at), h.expire)
	}
}

// keep makes kept, a prefix-reuse of held, what is held; h.mu is held.
func (h *taskHold) keep(kept []heldTask) {
	clear(h.held[len(kept):])
	h.held = kept
	if len(kept) == 0 && h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// eventSink is one open event stream to a client, written by the goroutine
// that serves it and, for a released message, by another: one writer at
// a time, and none once the stream is done.
type eventSink struct {
	mu     sync.Mutex // guards the fields below
	w      http.ResponseWriter
	rc     *http.ResponseController
	closed bool
	// live, if set, is asked before each event: an error ends the
	// stream, the event unwritten (untilExpiry).
	live func() error
}

func newEventSink(w http.ResponseWriter) *eventSink {
	return &eventSink{w: w, rc: http.NewResponseController(w)}
}

var errStreamDone = errors.New("the stream has ended")

// event writes ev and flushes it.
func (s *eventSink) event(ev transport.SSEEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamDone
	}
	if s.live != nil {
		if err := s.live(); err != nil {
			s.closed = true
			return err
		}
	}
	if err := transport.WriteSSEEvent(s.w, ev); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *eventSink) send(msg []byte) error {
	data, err := transport.Compact(msg)
	if err != nil {
		return err
	}
	return s.event(transport.SSEEvent{Event: "message", Data: data})
}

// close ends writing to s: its handler is done with the stream, or
// writes to it alone from now on.
func (s *eventSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// holdTask returns what offers o's taskHold a message about a task not
// the client's, nil when o has none: its own, or its session's once one
// of the session's requests made it.
func (o *observer) holdTask(ctx context.Context) holdFunc {
	h := o.tasks
	if h == nil && o.sess != nil {
		h = o.sess.tasks.Load()
	}
	if h == nil || o.sink == nil {
		return nil // a JSON answer: a message held could not follow it
	}
	return func(m *intercept.Message) (held, owned bool) {
		return h.hold(ctx, o.cc, m, m.Raw, o.sink)
	}
}

// answeredTasks returns how many of o's task-augmented requests b, a
// message of the upstream's answer, answers, and forgets them.
func (o *observer) answeredTasks(b []byte) int {
	if len(o.creating) == 0 || !mayHoldMember(b, idMember) {
		return 0
	}
	msgs, err := o.decode(b)
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range msgs {
		if (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) && o.creating[m.IDKey()] {
			delete(o.creating, m.IDKey())
			n++
		}
	}
	return n
}

// endSink ends o's event stream to the client for others: what is held
// for it is withheld.
func (o *observer) endSink() {
	o.sink.close()
	h := o.tasks
	if h == nil && o.sess != nil {
		h = o.sess.tasks.Load()
	}
	if h != nil {
		h.forget(o.sink)
	}
}

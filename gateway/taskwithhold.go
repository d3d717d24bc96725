package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// Messages about another's task: an upstream sees one set of credentials
// for every agent, so it may tell any client about any task, as mcp-go
// tells every session of each task's notifications/tasks/status. Every
// path that carries an upstream's messages to a client withholds a
// notification or request about an MCP task that client does not own
// (intercept.ForeignTask), and only that message: in a batch, the rest is
// delivered. Each is counted and logged. One about a task not yet known
// may first be held for its owner (taskhold.go).

// withheldTasks counts the messages withheld from clients for naming a
// task they do not own; safe for concurrent use.
type withheldTasks struct {
	log     *slog.Logger                                // never nil
	metrics interface{ MessageWithheld(reason string) } // nil: none
	n       atomic.Uint64
}

// drop counts and logs m, from cc's upstream, withheld from the client
// of cc for naming a task that client does not own.
func (w *withheldTasks) drop(cc intercept.CallContext, m *intercept.Message) {
	id, _ := intercept.NamedTask(m)
	n := w.n.Add(1)
	if w.metrics != nil {
		w.metrics.MessageWithheld("foreign_task")
	}
	w.log.Debug("an upstream message about an MCP task the client does not own was not delivered",
		"upstream", cc.Upstream, "method", m.Method, "task", id, "agent", cc.Agent, "withheld", n)
}

// TasksWithheld is how many messages from upstreams the gateway has
// withheld from clients because they were about an MCP task the client
// does not own (another agent's, or one the gateway never saw created).
func (g *Gateway) TasksWithheld() uint64 { return g.withheld.n.Load() }

// unreadable counts one message from an upstream that was not delivered
// because the gateway could not read it (not JSON, or JSON-RPC a client
// could read otherwise, such as an id spelled 7.0), and logs it through
// d: the first, then at most one line per unreadableLogEvery with how many
// since (a server that logs to stdout writes many).
func (w *withheldTasks) unreadable(d *dropLog, upstream string, err error) {
	if w.metrics != nil {
		w.metrics.MessageWithheld("unreadable")
	}
	d.warn(w.log, "messages from upstream not JSON-RPC as the gateway reads them; not delivered", "upstream", upstream, "err", err)
}

// answer counts one answer from an upstream not passed on for err:
// longer than the gateway reads (too_large), else not read as a client
// would read it (unreadable). The caller logs it.
func (w *withheldTasks) answer(err error) {
	reason := "unreadable"
	if _, ok := errors.AsType[*answerTooLarge](err); ok || tooLong(err) {
		reason = "too_large"
	}
	if w.metrics != nil {
		w.metrics.MessageWithheld(reason)
	}
}

// tooLong reports whether err ended reading an upstream at a message
// longer than the gateway reads (max_answer_bytes): a stdio line, a
// WebSocket message, an event's data.
func tooLong(err error) bool {
	_, ok := errors.AsType[*transport.TooLongError](err)
	return ok
}

// readFailed returns err, why reading from an upstream ended, as the
// requests waiting on it are told. A message longer than the gateway
// reads is counted as withheld (too_large), and the setting that bounds
// it is named.
func (w *withheldTasks) readFailed(err error) error {
	if !tooLong(err) {
		return err
	}
	w.answer(err)
	return fmt.Errorf("%w (max_answer_bytes)", err)
}

// stray counts one result (on a list's stream, any response) from an
// upstream that was not delivered because it answers no request the
// client waits for on that stream (a client takes a result by its id,
// whatever stream it comes on: it would be shown unscreened), and logs it
// through d.
func (w *withheldTasks) stray(d *dropLog, upstream string) {
	if w.metrics != nil {
		w.metrics.MessageWithheld("stray")
	}
	d.warn(w.log, "upstream sent a response for a request not asked on this stream; not delivered", "upstream", upstream)
}

// behind counts one notification of a subscription not passed on because
// its client is too far behind reading it (a virtual server's listen),
// and logs it through d.
func (w *withheldTasks) behind(d *dropLog, virtual string) {
	if w.metrics != nil {
		w.metrics.MessageWithheld("behind")
	}
	d.warn(w.log, behindMsg, "virtual_server", virtual)
}

// denied counts one update of uri from upstream not passed on because
// the client may not read the resource (resourceUpdate), and logs it;
// virtual names the virtual server whose subscription it came on, if
// any.
func (w *withheldTasks) denied(upstream, virtual, uri string) {
	if w.metrics != nil {
		w.metrics.MessageWithheld("denied")
	}
	args := []any{"upstream", upstream, "uri", boundURI(uri)}
	if virtual != "" {
		args = append(args, "virtual_server", virtual)
	}
	w.log.Debug("an update of a resource the client may not read was not delivered", args...)
}

// behindDone logs what behind counted through d and has not logged yet,
// once nothing more is counted through it.
func (w *withheldTasks) behindDone(d *dropLog, virtual string) {
	d.flush(w.log, behindMsg, "virtual_server", virtual)
}

const behindMsg = "a subscription's client is too far behind: notifications not passed on"

// unreadableLogEvery is how often a dropLog logs.
const unreadableLogEvery = 10 * time.Second

// dropLog rate-limits the log of one upstream connection's undelivered
// messages; its zero value is ready.
type dropLog struct {
	mu    sync.Mutex
	last  time.Time
	since int
}

func (d *dropLog) warn(log *slog.Logger, msg string, args ...any) {
	d.mu.Lock()
	d.since++
	now := time.Now()
	if !d.last.IsZero() && now.Sub(d.last) < unreadableLogEvery {
		d.mu.Unlock()
		return
	}
	n := d.since
	d.since, d.last = 0, now
	d.mu.Unlock()
	log.Warn(msg, append(args, "count", n)...)
}

// flush logs, with msg and args, what d has counted since it last
// logged, if anything: for the end of what d rate-limited, whose last
// drops would otherwise go unsaid.
func (d *dropLog) flush(log *slog.Logger, msg string, args ...any) {
	d.mu.Lock()
	n := d.since
	d.since, d.last = 0, time.Now()
	d.mu.Unlock()
	if n > 0 {
		log.Warn(msg, append(args, "count", n)...)
	}
}

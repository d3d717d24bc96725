package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Resumed streams. A 2025-era client whose answer stream broke off (it
// went away, or the server closed the stream: SEP-1699) comes back with a
// GET and Last-Event-ID, and the upstream replays what it had not
// delivered, the answers to that POST's requests among them. A GET names
// no request, so when a POST's event stream ends the session remembers
// each request a resumed stream may still answer, with what screening its
// answer needs (its method and call context). A result on a resumed stream
// for one of them is screened exactly as on the POST's own stream, and the
// request is forgotten; one for any other id (never sent, answered
// already, forgotten) is withheld and counted as a stray. The memory is
// the replica's, unless the session is sealed and the replicas share a
// store (replayshare.go): without one, a resumed stream on another
// replica cannot be screened, and its results are strays.

// replayCall is a request whose answer a resumed stream may carry.
type replayCall struct {
	method string
	cursor string                // of a tools/list asked with one (intercept.ListCursor)
	cc     intercept.CallContext // the request's
	at     time.Time             // when its stream ended
	// id is the client's id of a request sent under the gateway's
	// (ids.go), whose key the call is remembered by; nil for another.
	id jsontext.Value
	// large marks a call whose cursor and method passed maxKeptCall,
	// kept without them: its id stays its own, and its answer on a
	// resumed stream is withheld.
	large bool
}

// The bounds of a session's memory of such requests: past maxReplays the
// one remembered first is forgotten, and each is after replayTTL (the
// default idle timeout of a session).
const (
	maxReplays = 64
	replayTTL  = 30 * time.Minute
)

// replays is a session's memory of the requests a resumed stream may
// answer, by id, and of the ids its open exchanges wait on; its zero
// value is ready.
type replays struct {
	mu    sync.Mutex // guards calls, open, upIDs and upTokens
	calls map[string]replayCall
	// open holds the ids the session's open exchanges wait on (a POST's
	// requests, the requests a resumed stream took from calls), each with
	// its exchange's hold: a request under one of them is refused (as on
	// every other path), else an upstream that routes answers by id, and
	// the memory of each stream that ends, could take the one's answer
	// for the other's and screen it so. An id is held until its
	// exchange ends, so open is as large as the requests in flight.
	open map[string]*hold
	// upIDs maps the id key of an open request sent to a closed upstream
	// with the gateway's id to that id (ids.go): what the client's
	// cancellation of it is sent with.
	upIDs map[string]jsontext.Value
	// upTokens maps the gateway's progress token (as JSON) of an open
	// request sent to a closed upstream to the client's, for the GET
	// stream (restoreTokens).
	upTokens map[string]jsontext.Value
	// swappedCalls maps the client's id key of each call in calls
	// remembered under the gateway's id to that id's key: a request the
	// client sends anew under its id forgets it too.
	swappedCalls map[string]string
}

// hold is an open exchange's hold on the ids it waits on.
type hold struct {
	ids []string // held in process; guarded by the replays' mu
	// asIs: the exchange's requests went to the upstream under the
	// client's own ids, the upstream not being closed to the client then
	// (upstreamCall): a cancellation of one is passed on under its id,
	// whatever the upstream is now (replays.upstreamID).
	asIs atomic.Bool

	// For a shared session (replayshare.go): token names the exchange in
	// the store, which holds shared for it, renewed by renew.
	token  string
	mu     sync.Mutex // guards shared and renew
	shared []string
	renew  *time.Timer
}

// claim has a new exchange hold the ids of the requests among msgs,
// unless one is held already, or is that of a request whose stream broke
// off, remembered as of now: then it returns that id (and, for the
// latter, its request's method: broken), and holds none. The upstream
// answers by id and may yet answer the broken-off request: its answer
// would be taken for the new request's (on the new request's stream, by
// an upstream that routes answers by id, or on a resumed stream once the
// new one's broke off too), screened as what it is not (a tools/list
// policy hides tools of as a tools/call's result) and passed on. MCP
// forbids reusing an id within a session, and the SDKs count ids up and
// resume a broken stream with a GET, so none is taken over. A request
// remembered under the gateway's id (ids.go) is the exception: the
// upstream knows it by that id, not the client's, and a request sent anew
// under the client's id forgets it (its answer is then a stray).
func (r *replays) claim(msgs []*intercept.Message, now time.Time) (h *hold, reused, broken string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		if _, ok := r.open[m.IDKey()]; ok {
			return nil, m.IDKey(), ""
		}
		if c, ok := r.calls[m.IDKey()]; ok && c.id == nil && now.Sub(c.at) <= replayTTL {
			return nil, m.IDKey(), c.method
		}
	}
	h = new(hold)
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		if r.open == nil {
			r.open = make(map[string]*hold)
		}
		r.open[m.IDKey()] = h
		h.ids = append(h.ids, m.IDKey())
		r.drop(m.IDKey()) // expired, or the upstream's id of another
		if up, ok := r.swappedCalls[m.IDKey()]; ok {
			r.drop(up)
		}
	}
	return h, "", ""
}

// drop forgets the request id; r.mu is held.
func (r *replays) drop(id string) {
	c, ok := r.calls[id]
	if !ok {
		return
	}
	delete(r.calls, id)
	if c.id != nil {
		delete(r.swappedCalls, intercept.IDKeyOf(c.id))
	}
}

// release lets go of the ids h holds, its exchange having ended (and
// remembered what a resumed stream may still answer: keep).
func (r *replays) release(h *hold) {
	if h == nil || len(h.ids) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range h.ids {
		if r.open[id] == h {
			delete(r.open, id)
		}
	}
	h.ids = nil
}

// remember keeps c as the request id, as of now; it reports whether
// another one had to be forgotten to keep within maxReplays.
func (r *replays) remember(id string, c replayCall, now time.Time) (forgot bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = make(map[string]replayCall)
	}
	r.expire(now)
	if _, ok := r.calls[id]; !ok && len(r.calls) >= maxReplays {
		oldest := ""
		for k, o := range r.calls {
			if oldest == "" || o.at.Before(r.calls[oldest].at) {
				oldest = k
			}
		}
		r.drop(oldest)
		forgot = true
	}
	c.at = now
	r.calls[id] = c
	if c.id != nil {
		if r.swappedCalls == nil {
			r.swappedCalls = make(map[string]string)
		}
		r.swappedCalls[intercept.IDKeyOf(c.id)] = id
	}
	return forgot
}

// take returns the request id and forgets it, if it is remembered as of
// now; h, the hold of the resumed stream that answers it, if any, then
// holds it.
func (r *replays) take(id string, now time.Time, h *hold) (replayCall, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	c, ok := r.calls[id]
	r.drop(id)
	if ok && h != nil {
		if r.open == nil {
			r.open = make(map[string]*hold)
		}
		r.open[id] = h
		h.ids = append(h.ids, id)
		if c.id != nil {
			// The client's id is the one it could send anew.
			r.open[intercept.IDKeyOf(c.id)] = h
			h.ids = append(h.ids, intercept.IDKeyOf(c.id))
		}
	}
	return c, ok
}

// hold has h hold id, which a resumed stream took from the session's
// shared store (replayshare.go).
func (r *replays) hold(id string, h *hold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = make(map[string]*hold)
	}
	r.open[id] = h
	h.ids = append(h.ids, id)
}

// expire forgets the requests remembered for longer than replayTTL; r.mu
// is held.
func (r *replays) expire(now time.Time) {
	for id, c := range r.calls {
		if now.Sub(c.at) > replayTTL {
			r.drop(id)
		}
	}
}

// storeRetry is how long after the session's shared store did not
// answer a resumed stream's lookup its results are withheld unasked.
const storeRetry = time.Second

// replay returns the observer of data, a message on o's resumed stream:
// the requests its responses answer are taken from the session's memory
// (this replica's, else, for a shared session, the store's) into it, so
// that they are screened and recorded as on their own stream. With none,
// it is o, whose stream no request waits on: a result there is a stray.
func (o *observer) replay(ctx context.Context, data []byte) *observer {
	msgs, err := o.decode(data)
	if err != nil || o.sess == nil {
		return o
	}
	var r *observer
	now := o.g.sessions.now()
	for _, m := range msgs {
		if m.Kind != intercept.KindResponse && m.Kind != intercept.KindError {
			continue
		}
		if o.held == nil {
			o.held = new(hold)
		}
		c, ok := o.sess.replays.take(m.IDKey(), now, o.held)
		if !ok && o.g.shares(o.sess) && time.Since(o.storeFailed) >= storeRetry {
			var failed bool
			if c, ok, failed = o.g.takeShared(ctx, o.sess, o.rt.up.Name, m.IDKey(), o.held); failed {
				o.storeFailed = time.Now()
			}
		}
		if !ok || c.large {
			continue
		}
		if r == nil {
			r = &observer{g: o.g, rt: o.rt, sess: o.sess, stream: true, pending: make(map[string]string, 1),
				last: o.last, lastMsgs: o.lastMsgs, lastErr: o.lastErr, sink: o.sink}
		}
		// The requests of one session share its owner: a message answering
		// several is screened with the call context of any of them.
		key := m.IDKey()
		if c.id != nil {
			// Sent under the gateway's id: the client has its own back.
			if r.swap == nil {
				r.swap = &idSwap{ids: make(map[string]jsontext.Value, 1)}
			}
			r.swap.ids[key], key = c.id, intercept.IDKeyOf(c.id)
		}
		r.pending[key], r.cc = c.method, c.cc
		if c.cursor != "" {
			if r.cursors == nil {
				r.cursors = make(map[string]string, 1)
			}
			r.cursors[key] = c.cursor
		}
		if o.took == nil {
			o.took = make(map[string]replayCall, 1)
		}
		o.took[m.IDKey()] = c
	}
	if r == nil {
		return o
	}
	return r
}

// delivered notes that r's message, a replayed answer, reached o's client.
func (o *observer) delivered(r *observer) {
	if r == o {
		return
	}
	if o.answered == nil {
		o.answered = make(map[string]bool, len(r.pending))
	}
	for id := range r.pending {
		o.answered[id] = true
	}
}

// keep remembers on the session, once o's event stream ended, the
// requests a resumed stream may still answer: those it passed no response
// to on, and, when the client went away (gone), every one, for the client
// may not have read what was written last. A request the gateway answered
// itself (failUnanswered) is answered. A shared session remembers them in
// the store, where every replica finds them, or, if it does not answer,
// not at all.
func (o *observer) keep(gone bool) {
	if o.sess == nil || !o.stream {
		return
	}
	var calls map[string]replayCall
	// remember keeps c under key unless its answer, as the client knows
	// it (answered), was passed on.
	remember := func(key, answered string, c replayCall) {
		if gone || !o.answered[answered] {
			if calls == nil {
				calls = make(map[string]replayCall)
			}
			calls[key] = c
		}
	}
	shares := o.g.shares(o.sess)
	if o.resumed {
		for key, c := range o.took {
			answered := key
			if c.id != nil {
				answered = intercept.IDKeyOf(c.id)
			}
			remember(key, answered, c)
		}
	} else {
		for id, method := range o.pending {
			c, key := replayCall{method: method, cursor: o.cursors[id], cc: o.cc}, id
			if up := o.swap.upstreamID(id); up != nil {
				if shares {
					// The store keeps calls by the id a client would
					// send anew; its answer on a resumed stream is
					// withheld (README).
					continue
				}
				key, c.id = intercept.IDKeyOf(up), o.swap.ids[string(up)]
			}
			remember(key, id, c)
		}
	}
	if len(calls) == 0 {
		return
	}
	if shares {
		o.g.rememberShared(o.sess, o.rt.up.Name, calls)
		return
	}
	now := o.g.sessions.now()
	forgot := false
	for id, c := range calls {
		if len(c.cursor)+len(c.method) > maxKeptCall {
			c = replayCall{cc: c.cc, id: c.id, large: true}
		}
		forgot = o.sess.replays.remember(id, c, now) || forgot
	}
	if forgot {
		o.g.log.Warn("a session's streams broke off with more requests unanswered than the gateway remembers; a resumed stream's answer to the oldest will be withheld",
			"upstream", o.rt.up.Name, "max", maxReplays)
	}
}

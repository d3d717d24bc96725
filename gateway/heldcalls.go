package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// Calls held while the client's user is asked (approve.go) can be
// cancelled by the client (notifications/cancelled). A cancelled call is
// never forwarded, whoever approves it later: the wait ends, and the
// approval request is withdrawn (approval.Store.Withdraw), so an operator
// cannot approve a call its agent abandoned. The cancellation itself is
// not passed on: the upstream never saw the call. A cancellation reaching
// another replica of the session is heldshare.go's.
//
// On an HTTP session the cancellation comes on a POST of its own, which
// may be taken while the call's POST is still being decided (a slow
// classifier, a slow approvals store): no call is held under its id yet.
// So a session remembers such a cancellation for a while (markCancelled),
// and the hold that follows is cancelled at once (hold). On a connection
// messages are taken in order: a cancellation never overtakes its call.

// withdrawer is an Approver that can withdraw a pending request whose
// call the client cancelled.
type withdrawer interface {
	Withdraw(id, by string) (approval.Request, error)
}

var _ withdrawer = (*approval.Store)(nil)

// abandoner is an Approver that can end a request, pending or approved,
// whose held call the gateway refused.
type abandoner interface {
	Abandon(id, by string) (approval.Request, error)
}

var _ abandoner = (*approval.Store)(nil)

// endLapsed ends approval request id, through ap, when the held call it
// was for was refused because the credential of its agent (ctx's
// principal) no longer holds: an approval given while the call waited,
// or after, would otherwise stay usable and send the same call again
// once the agent comes back with a new credential. The operator sees it
// withdrawn by the credential's lapse.
func endLapsed(ctx context.Context, ap Approver, id, agent string) {
	if id == "" || credentialGone(ctx) == nil {
		return
	}
	if a, ok := ap.(abandoner); ok {
		_, _ = a.Abandon(id, lapsedBy(agent))
	}
}

func lapsedBy(agent string) string {
	if agent == "" {
		agent = "client"
	}
	return "credential-lapsed:" + agent
}

// heldCall is one call of the client's waiting for its approval.
type heldCall struct {
	approvalID string
	// marked, when set, makes this no held call but the mark of a
	// cancellation that named no held call, at that time.
	marked time.Time
	// cancelled is closed when the client cancels the call while it is
	// still held; the call is then never forwarded.
	cancelled chan struct{}
}

// heldCalls are a session's or a connection's held calls, by the JSON id
// key of the client's request. The zero value is empty and ready.
type heldCalls struct {
	mu sync.Mutex // guards the fields below
	m  map[string]*heldCall
	// ended: the session or connection was ended (cancelAll). A call
	// still being decided then is held after, and is cancelled as it is.
	ended bool
}

// hold registers the held call whose request id has key, waiting under
// approval request approvalID. A call held again under the same id takes
// its place.
//
// If the client cancelled the call before (markCancelled), or ended its
// session or connection (cancelAll) while the call was being decided, the
// returned call is cancelled already, and not registered: the caller
// withdraws its approval request.
func (hc *heldCalls) hold(key, approvalID string) *heldCall {
	h := &heldCall{approvalID: approvalID, cancelled: make(chan struct{})}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.ended {
		close(h.cancelled)
		return h
	}
	if old := hc.m[key]; old != nil && !old.marked.IsZero() {
		delete(hc.m, key)
		if time.Since(old.marked) < cancelMarkTTL {
			close(h.cancelled)
			return h
		}
	}
	if hc.m == nil {
		hc.m = map[string]*heldCall{}
	}
	hc.m[key] = h
	return h
}

// cancelMarkTTL is how long a cancellation naming no held call is
// remembered (markCancelled), and maxMarks how many a session remembers.
const (
	cancelMarkTTL = 30 * time.Second
	maxMarks      = 64
)

// markCancelled remembers the cancellation m, which named no held call,
// for a hold of its id within cancelMarkTTL to find. Past maxMarks the
// oldest mark is forgotten.
func (hc *heldCalls) markCancelled(m *intercept.Message) {
	id, ok := cancelledID(m)
	if !ok {
		return
	}
	key := intercept.IDKeyOf([]byte(id))
	now := time.Now()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.m == nil {
		hc.m = map[string]*heldCall{}
	}
	if old := hc.m[key]; old != nil && old.marked.IsZero() {
		return // held meanwhile: that call's cancellation is cancel's
	}
	roomForMark(hc.m, now, func(h *heldCall) time.Time { return h.marked })
	hc.m[key] = &heldCall{marked: now}
}

// roomForMark drops the marks of cancellations in m (entries whose marked
// time is set) past cancelMarkTTL and, when maxMarks are left, the
// oldest, so that one more fits.
func roomForMark[V any](m map[string]V, now time.Time, marked func(V) time.Time) {
	marks, oldest := 0, ""
	for k, v := range m {
		t := marked(v)
		switch {
		case t.IsZero():
		case now.Sub(t) >= cancelMarkTTL:
			delete(m, k)
		default:
			marks++
			if oldest == "" || t.Before(marked(m[oldest])) {
				oldest = k
			}
		}
	}
	if marks >= maxMarks {
		delete(m, oldest)
	}
}

// any reports whether a call is held here (a mark is none).
func (hc *heldCalls) any() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for _, h := range hc.m {
		if h.marked.IsZero() {
			return true
		}
	}
	return false
}

// release forgets h: the call was forwarded, answered or refused, so a
// cancellation naming its id is no longer the gateway's to take. It
// reports false when the client cancelled h first, and the call must not
// go on.
func (hc *heldCalls) release(key string, h *heldCall) bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	select {
	case <-h.cancelled:
		return false
	default:
	}
	if hc.m[key] == h {
		delete(hc.m, key)
	}
	return true
}

// releaseLater forgets h after cancelGrace: its client went away while
// the call was held, and a client that gives up closes its request first
// and cancels after.
func (hc *heldCalls) releaseLater(key string, h *heldCall) {
	time.AfterFunc(cancelGrace, func() { hc.release(key, h) })
}

// cancel takes the client's cancellation m if it names a call still held
// here: the call is marked cancelled (its wait ends and it is never
// forwarded) and its approval request withdrawn through ap on behalf of
// agent. It reports whether m named one.
func (hc *heldCalls) cancel(m *intercept.Message, ap Approver, agent string) bool {
	id, ok := cancelledID(m)
	if !ok {
		return false
	}
	key := intercept.IDKeyOf([]byte(id))
	hc.mu.Lock()
	h := hc.m[key]
	if h != nil && !h.marked.IsZero() {
		h = nil // a mark (markCancelled), no held call
	} else {
		delete(hc.m, key)
	}
	if h != nil {
		close(h.cancelled) // before the withdrawal wakes the wait
	}
	hc.mu.Unlock()
	if h == nil {
		return false
	}
	if w, ok := ap.(withdrawer); ok {
		_, _ = w.Withdraw(h.approvalID, cancelledBy(agent))
	}
	return true
}

// cancelAll cancels every call still held here, as cancel does one: the
// session or connection they were sent on was ended by its client, which
// abandons them all, so no later approval sends one. So are those held
// after (hold), whose decision was under way.
func (hc *heldCalls) cancelAll(ap Approver, agent string) {
	hc.mu.Lock()
	hc.ended = true
	var held []*heldCall
	for _, h := range hc.m {
		if h.marked.IsZero() { // a mark (markCancelled) is no call
			close(h.cancelled) // before the withdrawal wakes the wait
			held = append(held, h)
		}
	}
	hc.m = nil
	hc.mu.Unlock()
	if w, ok := ap.(withdrawer); ok {
		for _, h := range held {
			_, _ = w.Withdraw(h.approvalID, cancelledBy(agent))
		}
	}
}

func cancelledBy(agent string) string {
	if agent == "" {
		agent = "client"
	}
	return "mcp-cancel:" + agent
}

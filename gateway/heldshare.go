package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// Held calls across replicas. A call held for its user's approval waits
// on the replica that holds it (approve.go), but its client's
// cancellation may reach any replica serving the session (a sealed
// session, Options.SessionKeys). So the holding replica records the
// held call in the session's shared store (Options.Exchanges), under
// the SHA-256 of the session id (not the id itself) by request id, with
// the approval request it waits on, for holdTTL, renewed every holdRenew while held
// and deleted when the hold ends. A replica that gets a cancellation
// naming an id it does not hold looks it up there: one round trip per
// POST, no lock, and nothing asked of the approvals store (whose every
// operation takes a lock shared by all replicas) unless the call is held.
// A held call is marked cancelled in the store, its approval request
// withdrawn, and the cancellation not passed on: the holding replica's
// wait sees the request withdrawn and ends the hold unanswered, as it
// does for a cancellation it gets itself. Where the approvals store is
// not shared (the withdrawal finds no such request), the holding replica
// sees the mark at its next renewal, and before it sends an approved
// call. A call held through a virtual server is recorded under the
// virtual session and the client's request id, which the client's
// cancellation names, and looked up by the aggregator of a replica that
// does not serve that request.
//
// A client's DELETE of the session, on whichever replica it lands,
// abandons every call of the session held on any replica, as cancelling
// each would (heldCalls.cancelAll on the replica that takes the DELETE):
// the session is marked ended in the store, each call held there marked
// cancelled and its approval request withdrawn (CallHolds.CancelSession),
// before the session is ended upstream. A DELETE the store cannot take is
// refused (503) and ends nothing.
//
// A cancellation may reach another replica before the holding one has
// recorded the hold (between the policy's decision and the record, or
// even before the call itself): the store then marks the id cancelled
// for a while (CallHolds.CancelCalls), and the hold, recorded after,
// finds the mark. The call is not held, its request is withdrawn, and
// the question never asked. The mark costs nothing more: it is written
// by the lookup the cancellation makes anyway.
//
// Fail closed: a cancellation the store cannot look up is refused (503),
// not passed on, as it may name a call held elsewhere; a call whose hold
// the store cannot record is not held (the request is withdrawn and the
// call answered with an error); an approved call whose record cannot be
// read again is not sent.

// CallHolds is an ExchangeStore that also records which requests of a
// session are held for approval, for a cancellation reaching another
// replica. Without it a cancellation is taken only by the replica
// holding the call, and passed on by the others. Its methods must be
// safe for concurrent use and return within a bounded time, as
// ExchangeStore's.
type CallHolds interface {
	// HoldCall records that request id of session is held under
	// approval for ttl, or renews the record; cancelled reports that
	// CancelCalls marked it meanwhile.
	// With renew, a record that is gone is not written again: the
	// error then has a method HoldLost reporting true (holdLost), as a
	// cancellation meanwhile may have gone unseen.
	HoldCall(ctx context.Context, session, id, approval string, ttl time.Duration, renew bool) (cancelled bool, err error)
	// ReleaseCall forgets the record; cancelled reports that
	// CancelCalls had marked it. A call sent on is released first, so
	// that a cancellation through another replica is passed on to where
	// the call runs rather than taken as for a held call. A record that
	// is not there (lapsed, or lost by the store) is an error: a
	// cancellation may have gone unseen, and the call is not sent.
	ReleaseCall(ctx context.Context, session, id, approval string) (cancelled bool, err error)
	// CancelCalls marks those of ids that are held as cancelled and
	// returns the approval each is held under ("" for an id not held,
	// or marked already). An id not held is marked too, for a while:
	// a HoldCall of it meanwhile (not a renewal) records the hold
	// cancelled and reports so, as the cancellation may have come
	// before the holding replica recorded the hold.
	CancelCalls(ctx context.Context, session string, ids []string) ([]string, error)
	// CancelSession marks every call of session held as cancelled and
	// returns the approvals they are held under, once: the client ended
	// the session. The session is marked too, for a while: a HoldCall of
	// it meanwhile (not a renewal) records the hold cancelled and
	// reports so, as the end may have come before the holding replica
	// recorded the hold.
	CancelSession(ctx context.Context, session string) ([]string, error)
}

// errCancelUnchecked refuses a cancellation the shared store could not
// look up.
var errCancelUnchecked = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not taken: the gateway could not check whether another replica holds the cancelled request for approval (the replicas' shared store did not answer); send the cancellation again"}

// errTooManyCancels refuses a batch naming more cancelled requests than
// one lookup in the shared store may.
var errTooManyCancels = &intercept.WireError{Code: intercept.CodeInvalidRequest,
	Message: fmt.Sprintf("not taken: a batch may cancel at most %d requests in a session shared between replicas; send it in parts", maxSharedIDs)}

// errHoldUnshared answers a call the gateway could not hold where the
// session's other replicas see it.
var errHoldUnshared = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not sent: the call needs approval, and the gateway could not record it as held where the session's other replicas see it (the replicas' shared store did not answer); try again"}

// errHeldUnchecked answers an approved call the gateway could not check
// for a cancellation through another replica.
var errHeldUnchecked = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not sent: the call was approved, but the gateway could not check that it was not cancelled through another replica (the replicas' shared store did not answer); send it again"}

// callHolds returns the store that records sess's held calls, or nil
// when no other replica can serve sess or the store cannot record them.
func (g *Gateway) callHolds(sess *session) CallHolds {
	if !g.shares(sess) {
		return nil
	}
	ch, _ := g.opts.Exchanges.(CallHolds)
	return ch
}

// sharedHold is a held call as recorded in the session's shared store.
type sharedHold struct {
	store                 CallHolds
	session, id, approval string
}

// shareHold records the held call of x, held under approval, in the
// shared store; nil if no other replica can serve its session. An inner
// call of a virtual server's session (ctx has the client's request id)
// is recorded under that session and id, which the client cancels.
// cancelled reports that the client cancelled the call through another
// replica before the hold was recorded: it must not be held.
func (g *Gateway) shareHold(ctx context.Context, x *exchange, approval string) (h *sharedHold, cancelled bool, err error) {
	h = &sharedHold{session: x.sess.id, id: x.msgs[0].IDKey(), approval: approval}
	if outer, ok := ctx.Value(outerIDKey{}).(string); ok && x.virtual != "" {
		h.session, h.id = x.virtual, intercept.IDKeyOf([]byte(outer))
		if g.sealer != nil { // the virtual session moves between replicas
			h.store, _ = g.opts.Exchanges.(CallHolds)
		}
	} else {
		h.store = g.callHolds(x.sess)
	}
	if h.store == nil {
		return nil, false, nil
	}
	if cancelled, err = h.store.HoldCall(ctx, h.session, h.id, h.approval, holdTTL, false); err != nil {
		return nil, false, err
	}
	return h, cancelled, nil
}

// check renews h and reports whether the call was cancelled through
// another replica; a record that is gone is an error holdLost reports.
func (h *sharedHold) check(ctx context.Context) (cancelled bool, err error) {
	return h.store.HoldCall(ctx, h.session, h.id, h.approval, holdTTL, true)
}

// holdLost reports whether err says a held call's record is gone
// (CallHolds.HoldCall with renew).
func holdLost(err error) bool {
	var l interface{ HoldLost() bool }
	return errors.As(err, &l) && l.HoldLost()
}

// errHoldLost answers a held call whose record other replicas see is
// gone: a cancellation through one of them may have gone unseen.
var errHoldLost = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not sent: the call was held for approval, but the record the session's other replicas see of it was lost (the replicas' shared store lost it), so a cancellation may have gone unseen; send it again"}

// forget deletes h's record and reports whether the call was cancelled
// through another replica meanwhile. If the store does not answer, the
// record lapses after holdTTL.
func (h *sharedHold) forget(ctx context.Context) (cancelled bool, err error) {
	return h.store.ReleaseCall(context.WithoutCancel(ctx), h.session, h.id, h.approval)
}

// cancelShared takes the cancellations among msgs naming calls of sess
// held on another replica: each is marked cancelled in the shared store,
// and its approval request withdrawn on behalf of agent. It reports
// whether it took one; err says the store could not be asked (then none
// is taken), or errTooManyCancels that the cancellations are too many.
// msgs naming calls held here are taken before (heldCalls.cancel).
func (g *Gateway) cancelShared(ctx context.Context, sess *session, msgs []*intercept.Message, agent string) (bool, error) {
	store := g.callHolds(sess)
	if store == nil || !sess.elicitForm {
		return false, nil // nothing of sess is held for its user anywhere
	}
	var ids []string
	for _, m := range msgs {
		if id, ok := cancelledID(m); ok {
			ids = append(ids, id)
		}
	}
	return g.cancelElsewhere(ctx, store, sess.id, ids, agent)
}

// cancelElsewhere takes the cancellations of ids (JSON), requests of
// session, that a replica holds for approval, as cancelShared.
func (g *Gateway) cancelElsewhere(ctx context.Context, store CallHolds, session string, ids []string, agent string) (bool, error) {
	if len(ids) == 0 || g.opts.Approver == nil {
		return false, nil
	}
	if len(ids) > maxSharedIDs {
		return false, errTooManyCancels
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = intercept.IDKeyOf([]byte(id))
	}
	approvals, err := store.CancelCalls(ctx, session, keys)
	if err != nil {
		return false, fmt.Errorf("looking up held calls: %w", err)
	}
	return g.withdrawElsewhere(approvals, agent), nil
}

// errEndUnshared refuses a DELETE whose session's held calls the shared
// store could not cancel on the other replicas.
var errEndUnshared = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not ended: the gateway could not cancel the session's calls held for approval on other replicas (the replicas' shared store did not answer); send DELETE again"}

// endShared cancels the calls of session held for approval on any
// replica, in store, and withdraws their approval requests on behalf of
// agent: its client ends it. err says the store could not be asked.
func (g *Gateway) endShared(ctx context.Context, store CallHolds, session, agent string) error {
	approvals, err := store.CancelSession(ctx, session)
	if err != nil {
		return fmt.Errorf("cancelling the ended session's held calls: %w", err)
	}
	g.withdrawElsewhere(approvals, agent)
	return nil
}

// withdrawElsewhere withdraws the approval requests of calls held on
// other replicas that their client cancelled (approvals, "" for none),
// on behalf of agent, and reports whether there was one.
func (g *Gateway) withdrawElsewhere(approvals []string, agent string) bool {
	taken := false
	for _, a := range approvals {
		if a == "" {
			continue
		}
		taken = true
		if w, ok := g.opts.Approver.(withdrawer); ok {
			if _, err := w.Withdraw(a, cancelledBy(agent)); err != nil {
				// Not in this replica's approvals store, or decided: the
				// holding replica sees the mark.
				g.log.Debug("cancelled call held on another replica: approval request not withdrawn here", "approval", a, "err", err)
			}
		}
	}
	return taken
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// Ended sealed sessions across replicas. A sealed session id stays valid
// under the keys after its client ends the session with DELETE: the
// replica that takes the DELETE remembers the id (sealer.end), but
// another replica, or the same one restarted, would serve it again. A
// virtual session adopted there even opens new inner sessions in place
// of the ended ones, so a copy of the id (a log, a proxy, a stolen
// header) outlived the user's logout. So where a store records ended
// sessions (SessionEnds: Options.SessionEnds, a file for one gateway
// that restarts, or Options.Exchanges, the replicas' Redis), the DELETE
// records the id's end there, under its SHA-256, until the id expires
// (Options.SessionMaxAge); a replica adopting a sealed id looks the
// record up, and, where other replicas serve the same sessions, so does
// every request of a session already in its table. Fail closed: a DELETE whose
// end the store cannot record is refused (503) and ends nothing here,
// and a request whose session the store cannot check is refused (503).

// SessionEnds is an ExchangeStore that also records which sealed
// sessions their clients ended, for every replica. Its methods must be
// safe for concurrent use and return within a bounded time, as
// ExchangeStore's.
type SessionEnds interface {
	// EndSession records that session was ended, for ttl (0: until
	// removed).
	EndSession(ctx context.Context, session string, ttl time.Duration) error
	// SessionEnded reports whether EndSession recorded session.
	SessionEnded(ctx context.Context, session string) (bool, error)
}

// errEndUnrecorded refuses a DELETE whose end the shared store could not
// record.
var errEndUnrecorded = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not ended: the gateway could not record the session's end where its other replicas see it (the replicas' shared store did not answer); send DELETE again"}

// errEndUnchecked refuses a request whose sealed session the shared
// store could not check.
var errEndUnchecked = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not served: the gateway could not check whether this session was ended through another replica (the replicas' shared store did not answer); try again"}

// sessionEndsStore returns the store recording ended sealed sessions,
// or nil.
func (g *Gateway) sessionEndsStore() SessionEnds {
	if g.sealer == nil {
		return nil
	}
	if g.opts.SessionEnds != nil {
		return g.opts.SessionEnds
	}
	se, _ := g.opts.Exchanges.(SessionEnds)
	return se
}

// othersServe reports whether other replicas may serve this one's
// sealed sessions while it does (they share Exchanges): a session in its
// table may have been ended through one of them. Without, only a restart
// serves them elsewhere, and what is in the table was ended here.
func (g *Gateway) othersServe() bool { return g.opts.Exchanges != nil }

// recordEnd records that the client ended sealed session id here and,
// when shared is set (another replica, or this one restarted, may serve
// it), in the store, until id expires. Nothing is recorded if err is not
// nil.
func (g *Gateway) recordEnd(ctx context.Context, id string, shared bool) error {
	if g.sealer == nil {
		return nil
	}
	if se := g.sessionEndsStore(); se != nil && shared {
		var ttl time.Duration // no maximum age: for as long as the store keeps it
		if left, ok := g.sealer.left(id); ok {
			if left <= 0 {
				g.sealer.end(id)
				return nil // expired: no replica serves it
			}
			ttl = left
		}
		if err := se.EndSession(context.WithoutCancel(ctx), id, ttl); err != nil {
			return fmt.Errorf("recording the session's end: %w", err)
		}
	}
	g.sealer.end(id)
	return nil
}

// ended reports whether sealed session id was ended, here or, when
// shared is set, as the store recorded it (through another replica, or
// before a restart); err says the store could not be asked.
func (g *Gateway) ended(ctx context.Context, id string, shared bool) (bool, error) {
	if g.sealer == nil {
		return false, nil
	}
	if g.sealer.isEnded(id) {
		return true, nil
	}
	se := g.sessionEndsStore()
	if !shared || se == nil {
		return false, nil
	}
	// Asked whether or not the request's client is still there: one that
	// sends a request and hangs up, to resume its answer later, is served
	// (TestEndedCheckOutlivesClient). The store bounds the wait.
	ended, err := se.SessionEnded(context.WithoutCancel(ctx), id)
	if err != nil {
		g.log.Warn("session refused: the shared store did not say whether it was ended through another replica", "err", err)
		return false, errEndsUnchecked{err}
	}
	if ended {
		g.sealer.end(id) // no need to ask again here
	}
	return ended, nil
}

// errEndedElsewhere ends a stream of a session ended through another
// replica.
var errEndedElsewhere = errors.New("the session was ended")

// endPoll is how often an open stream of a session that other replicas
// serve asks the store whether the session was ended (endedElsewhere).
var endPoll = 5 * time.Second

// endedElsewhere ends a stream of a sealed session, whose context is ctx,
// once live says the session was ended through another replica, or that
// the store cannot tell, asking every endPoll until ctx ends. A stream
// that delivers asks before each message too (untilExpiry): this ends
// one that carries nothing, so that its client learns the session ended.
// Before, a GET stream open on replica B went on delivering the
// session's notifications, and upstream requests to its client, to
// whoever held it after the client ended the session through replica A
// (TestAttackEndedSessionGETStreamOtherReplica).
func (g *Gateway) endedElsewhere(ctx context.Context, live func() error) {
	t := time.NewTicker(endPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if live() != nil {
			return
		}
	}
}

// errEndsUnchecked is ended's error: the store did not answer.
type errEndsUnchecked struct{ err error }

func (e errEndsUnchecked) Error() string {
	return "checking whether the session ended: " + e.err.Error()
}
func (e errEndsUnchecked) Unwrap() error { return e.err }

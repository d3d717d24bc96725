package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// Replay memory and waiting ids across replicas. A sealed session
// (Options.SessionKeys) moves freely between replicas, and with it the
// two things replay.go keeps per session: the requests a resumed stream
// may answer, and the ids the session's open exchanges wait on. With
// Options.Exchanges set, both live in a store every replica sees
// (gateway/redisstore): a POST holds its requests' ids there (refused if
// an exchange on any replica holds one, or a request whose stream broke off
// is remembered under one), a stream that ends with requests
// unanswered remembers them there, and a resumed stream on any replica
// takes from there what it answers, deleting it (an answer is screened
// once). The store fails closed: a POST whose ids it cannot hold is
// refused, unsent, and a resumed result it cannot look up is withheld.
// Sessions that cannot move (unsealed ids, bridged upstreams) and
// gateways without a store keep both in process, at no cost.

// IDHolds holds the ids a session's open exchanges wait on.
type IDHolds interface {
	// Hold holds ids for token's exchange in session for ttl, unless one
	// is held for another token, or held for none and remembered
	// (ReplayMemory: a request whose stream broke off, which the upstream
	// may yet answer): then it returns that id and holds none. Holding
	// them again for the same token renews them.
	Hold(ctx context.Context, session, token string, ids []string, ttl time.Duration) (held string, err error)
	// Release lets go of those of ids still held for token.
	Release(ctx context.Context, session, token string, ids []string) error
}

// ReplayMemory keeps the requests of a session a resumed stream may
// answer, by id, as opaque bytes.
type ReplayMemory interface {
	// Remember keeps calls for ttl, each; past max in the session the
	// ones remembered first are forgotten, and forgot says how many.
	Remember(ctx context.Context, session string, calls map[string][]byte, max int, ttl time.Duration) (forgot int, err error)
	// Take returns the call remembered for id and forgets it; when there
	// is one and token is not empty, id is then held for token for ttl.
	Take(ctx context.Context, session, id, token string, ttl time.Duration) (call []byte, ok bool, err error)
}

// ExchangeStore is where the replicas serving sealed sessions share
// them. Its methods must be safe for concurrent use and return within a
// bounded time (Redis: agent_tasks.timeout).
type ExchangeStore interface {
	IDHolds
	ReplayMemory
}

// A shared hold lapses after holdTTL unless renewed (every holdRenew
// while its exchange is open): a replica that dies blocks its ids no
// longer than that.
const (
	holdTTL   = 2 * time.Minute
	holdRenew = 40 * time.Second
)

// maxSharedIDs bounds the requests of one POST of a shared session (a
// 2025-03-26 batch): each id is a key its hold writes in one Lua script,
// during which Redis answers no replica, and again to release and renew
// it. Real batches are a handful of requests.
const maxSharedIDs = 256

// errTooManyIDs refuses a batch of more than maxSharedIDs requests.
var errTooManyIDs = &intercept.WireError{Code: intercept.CodeInvalidRequest,
	Message: fmt.Sprintf("not sent: a batch may hold at most %d requests in a session shared between replicas; send it in parts", maxSharedIDs)}

// errIDsUnchecked refuses a request whose id the shared store could not
// check against the session's exchanges on other replicas.
var errIDsUnchecked = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "not sent: the gateway could not check this request's id against the session's requests waiting on other replicas (the replicas' shared store did not answer); try again"}

// shares reports whether s's exchanges are shared through the store: a
// sealed session on an HTTP upstream, which any replica may serve.
func (g *Gateway) shares(s *session) bool {
	return g.opts.Exchanges != nil && g.sealer != nil && s != nil && s.upstreamID != "" && s.bridge == nil
}

// claimIDs has a new exchange of sess hold the ids of the requests among
// msgs: in process (replays.claim), and in the store when sess is shared.
// reused is an id another exchange holds, or one of a request whose
// stream broke off (replays.claim); err, which reusedIDError makes, says
// which. err may also say the store could not hold them, or be
// errTooManyIDs, that they are too many. Either way nothing is held.
func (g *Gateway) claimIDs(ctx context.Context, sess *session, msgs []*intercept.Message) (h *hold, reused string, err error) {
	h, reused, broken := sess.replays.claim(msgs, g.sessions.now())
	if reused != "" {
		return nil, reused, reusedError(reused, broken, sess.route)
	}
	if !g.shares(sess) || len(h.ids) == 0 {
		return h, "", nil
	}
	if len(h.ids) > maxSharedIDs {
		sess.replays.release(h)
		return nil, "", errTooManyIDs
	}
	h.token = newToken()
	ids := slices.Clone(h.ids)
	held, err := g.opts.Exchanges.Hold(ctx, sess.id, h.token, ids, holdTTL)
	if err != nil || held != "" {
		sess.replays.release(h)
		if err != nil {
			g.log.Warn("request refused: its id could not be checked against the session's other replicas", "err", err)
			return nil, "", err
		}
		return nil, held, reusedError(held, "?", sess.route)
	}
	h.share(g, sess, ids...)
	return h, "", nil
}

// releaseIDs lets go of what h holds, in process and in the store.
func (g *Gateway) releaseIDs(sess *session, h *hold) {
	if sess == nil || h == nil {
		return
	}
	sess.replays.release(h)
	h.mu.Lock()
	ids := h.shared
	h.shared = nil
	if h.renew != nil {
		h.renew.Stop()
		h.renew = nil
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := g.opts.Exchanges.Release(context.WithoutCancel(g.ctx), sess.id, h.token, ids); err != nil {
		g.log.Warn("the ids of an ended exchange stay held on the session's other replicas until they lapse", "ttl", holdTTL, "err", err)
	}
}

// share records that the store holds ids for h, and renews them every
// holdRenew until h is released.
func (h *hold) share(g *Gateway, sess *session, ids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shared = append(h.shared, ids...)
	if h.renew != nil {
		return
	}
	var renew func()
	renew = func() {
		// Under h.mu throughout (at most the store's timeout): a release
		// meanwhile waits, rather than have this hold again what it let go.
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.renew == nil || g.ctx.Err() != nil {
			return // released, or the gateway closed
		}
		held, err := g.opts.Exchanges.Hold(g.ctx, sess.id, h.token, h.shared, holdTTL)
		if err != nil || held != "" {
			g.log.Warn("the ids of an open exchange could not be held longer on the session's other replicas", "held_elsewhere", held, "err", err)
		}
		h.renew = time.AfterFunc(holdRenew, renew)
	}
	h.renew = time.AfterFunc(holdRenew, renew)
}

// sharedCall is a replayCall as the store keeps it: what screening its
// answer needs, no more. Not the session id (cc.SessionID, the sealed id
// that lets a caller use the session: the taker knows it), nor, of the
// call's descriptor, its arguments (a secret an agent passes a tool:
// audit keeps them only hashed and redacted), the tool's description,
// annotations and inputSchema (the upstream's, of any size), or the
// principal twice.
type sharedCall struct {
	Method     string               `json:"m"`
	Cursor     string               `json:"r,omitempty"` // replayCall.cursor
	Upstream   string               `json:"u,omitempty"`
	Target     string               `json:"t,omitempty"`
	Agent      string               `json:"a,omitempty"`
	Version    string               `json:"v,omitempty"`
	ClientName string               `json:"c,omitempty"`
	TaskScope  string               `json:"k,omitempty"`
	Approve    bool                 `json:"e,omitempty"`
	Principal  *intercept.Principal `json:"p,omitempty"`
	// Call is the allowed action (tools/call, resources/read,
	// prompts/get) whose result the interceptor's OnResult
	// (classifier.scan_results) waits for, if it does.
	Call *intercept.ActionDescriptor `json:"d,omitempty"`
	// Large marks a call whose record passed maxKeptCall, kept as this
	// mark alone: its id stays the broken-off request's (a request
	// reusing it is refused) and its answer is withheld.
	Large bool `json:"l,omitempty"`
}

// maxKeptCall bounds a call's record in the store, and a call's cursor
// and method in process (replayCall.large). They are the client's, as
// long as a request, and a call is kept for replayTTL, up to maxReplays
// a session, a thousand sessions a client address: before, a tools/list
// with a cursor of 1 MiB of '<' (written \u003c) left 6 MiB in Redis for
// 30 minutes (TestAttackSharedReplayBytesBounded), and 1 MiB in process
// (TestAttackReplayBytesBounded). A record of a real call is far
// smaller (its arguments, tool description and schema are not kept), a
// principal's JWT claims included.
const maxKeptCall = 64 << 10

// largeCall is the record of a call past maxKeptCall.
var largeCall = []byte(`{"m":"","l":true}`)

var errLargeCall = errors.New("the request was too large for its record to be kept (its answer is withheld)")

// encodeCall encodes c, request id, for the store.
func (g *Gateway) encodeCall(id string, c replayCall) []byte {
	s := sharedCall{Method: c.method, Cursor: c.cursor, Upstream: c.cc.Upstream, Target: c.cc.Target,
		Agent: c.cc.Agent, Version: c.cc.ProtocolVersion, ClientName: c.cc.ClientName, TaskScope: c.cc.TaskScope,
		Approve: c.cc.ClientCanApprove, Principal: c.cc.Principal}
	if intercept.ActionMethod(c.method) {
		if d := g.ic.PendingResult(c.cc, id); d != nil {
			kept := *d
			kept.SessionID, kept.Principal, kept.Parameters = "", nil, nil
			kept.ToolDescription, kept.Annotations, kept.InputSchema = "", nil, nil
			s.Call = &kept
		}
	}
	b, _ := json.Marshal(s)
	if len(b) > maxKeptCall {
		return largeCall
	}
	return b
}

// decodeCall decodes b, request id of sess as the store kept it, and has
// the interceptor wait for its result as the replica that allowed it did
// (with the call's descriptor as kept: no arguments, no tool description
// or schema).
func (g *Gateway) decodeCall(sess *session, id string, b []byte) (replayCall, error) {
	var s sharedCall
	if err := json.Unmarshal(b, &s); err != nil {
		return replayCall{}, err
	}
	if s.Large {
		return replayCall{}, errLargeCall
	}
	if s.Method == "" {
		return replayCall{}, errors.New("no method")
	}
	c := replayCall{method: s.Method, cursor: s.Cursor, cc: intercept.CallContext{Upstream: s.Upstream, Target: s.Target, SessionID: telemetry.SessionRef(sess.id),
		Agent: s.Agent, ProtocolVersion: s.Version, ClientName: s.ClientName, TaskScope: s.TaskScope,
		ClientCanApprove: s.Approve, Principal: s.Principal}}
	if s.Call != nil && intercept.ActionMethod(s.Method) {
		s.Call.SessionID, s.Call.Principal = c.cc.SessionID, s.Principal
		g.ic.ExpectResult(c.cc, id, s.Call)
	}
	return c, nil
}

// rememberShared keeps calls in the store for sess. If the store does not
// answer they are forgotten, their answers on a resumed stream withheld:
// kept in process, where no other replica's request reusing an id can
// forget them, one would be taken for the answer to a later request under
// its id, and screened as the earlier one.
func (g *Gateway) rememberShared(sess *session, upstream string, calls map[string]replayCall) {
	enc := make(map[string][]byte, len(calls))
	for id, c := range calls {
		enc[id] = g.encodeCall(id, c)
	}
	forgot, err := g.opts.Exchanges.Remember(context.WithoutCancel(g.ctx), sess.id, enc, maxReplays, replayTTL)
	if err != nil {
		g.log.Warn("a session's unanswered requests are not remembered: a resumed stream's answer to them will be withheld (the replicas' shared store did not answer)",
			"upstream", upstream, "err", err)
		return
	}
	if forgot > 0 {
		g.log.Warn("a session's streams broke off with more requests unanswered than the gateway remembers; a resumed stream's answer to the oldest will be withheld",
			"upstream", upstream, "max", maxReplays)
	}
}

// takeShared takes the request id from the store for a resumed stream of
// sess, whose hold h then holds it; not found, or not known because the
// store did not answer (failed), the result is withheld.
func (g *Gateway) takeShared(ctx context.Context, sess *session, upstream, id string, h *hold) (c replayCall, ok, failed bool) {
	if h.token == "" {
		h.token = newToken()
	}
	b, ok, err := g.opts.Exchanges.Take(ctx, sess.id, id, h.token, holdTTL)
	if err != nil {
		g.log.Warn("a result on a resumed stream is withheld, and those for a second after unasked: the session's shared store did not say which request it answers", "upstream", upstream, "err", err)
		return replayCall{}, false, true
	}
	if !ok {
		return replayCall{}, false, false
	}
	h.share(g, sess, id)
	c, err = g.decodeCall(sess, id, b)
	if err != nil {
		g.log.Warn("a result on a resumed stream is withheld: the session's shared store gave a request the gateway cannot read", "upstream", upstream, "err", err)
		return replayCall{}, false, false
	}
	sess.replays.hold(id, h)
	return c, true, false
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

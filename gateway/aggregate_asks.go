package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Requests an upstream sends to the client (sampling/createMessage,
// elicitation/create, roots/list, ping, and the gateway's own approval
// questions on an upstream's route) reach a virtual server's client under
// an id the virtual server mints: two upstreams' ids cannot collide, and
// the client's answer goes back to the upstream that asked, under the id
// it used. A request that cannot reach the client (no stream open for it,
// or too many unanswered) is answered to the upstream at once with an
// error, so nothing waits for an answer that cannot come.

// askIDPrefix starts the JSON ids the virtual server gives relayed requests.
const askIDPrefix = `"sluice-ask-`

// maxPendingAsks bounds a session's relayed requests awaiting an answer.
const maxPendingAsks = 64

type pendingAsk struct {
	upstream string
	id       jsontext.Value // the upstream's own id
	// clientTask: the request names a task the client runs (an
	// upstream's tasks/* to the client, a task-augmented request), so
	// the answer's related task is the client's own.
	clientTask bool
}

// mintAsk registers a request from upstream and returns the id the client
// sees, or "" when the session has too many unanswered. With session keys
// the id is sealed (aggregate_sealed.go): any replica can take the answer.
func (a *aggregator) mintAsk(s *aggSession, in *innerSession, pa pendingAsk) string {
	if a.g.sealer != nil {
		// The id is all the answer needs, and another replica may take
		// it: nothing is kept here (so nothing piles up either).
		return a.sealAsk(s, in, pa)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asks) >= maxPendingAsks || s.closed {
		return ""
	}
	if s.asks == nil {
		s.asks = map[string]pendingAsk{}
	}
	s.asked++
	key := askIDPrefix + strconv.FormatUint(s.asked, 10) + `"`
	s.asks[key] = pa
	return key
}

func (s *aggSession) peekAsk(key string) (pendingAsk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pa, ok := s.asks[key]
	return pa, ok
}

func (s *aggSession) takeAsk(key string) (pendingAsk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pa, ok := s.asks[key]
	delete(s.asks, key)
	return pa, ok
}

// askSet is the ids minted for one inner exchange, forgotten when it ends:
// an answer after that has nobody waiting for it.
type askSet struct {
	mu   sync.Mutex
	keys []string
}

func (k *askSet) add(key string) {
	k.mu.Lock()
	k.keys = append(k.keys, key)
	k.mu.Unlock()
}

func (k *askSet) drop(s *aggSession) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range k.keys {
		if _, ok := s.asks[key]; !ok {
			continue // answered
		}
		delete(s.asks, key)
		s.gone = append(s.gone, key)
		if len(s.gone) > maxGoneAsks {
			s.gone = s.gone[1:]
		}
	}
}

// maxGoneAsks bounds aggSession.gone.
const maxGoneAsks = 64

// wasAsked reports whether key is a relayed request whose exchange ended
// unanswered lately, and forgets it: it is answered once.
func (s *aggSession) wasAsked(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range s.gone {
		if k == key {
			s.gone = append(s.gone[:i], s.gone[i+1:]...)
			return true
		}
	}
	return false
}

// ask relays msg, a request from upstream, to the client through send
// (nil or failing when the client cannot be reached) and returns the id it
// was given, or answers the upstream with an error and returns "".
func (a *aggregator) ask(r *http.Request, s *aggSession, upstream string, in *innerSession, msg []byte, send func([]byte) bool) string {
	var req rpcRequest
	if json.Unmarshal(msg, &req) != nil || len(req.ID) == 0 {
		return ""
	}
	why := "the client has no stream open on " + a.path() + " for requests from the server"
	orig := req.ID
	req.Params = relatedTaskOut(upstream, req.Params) // its task as the client knows it
	if send != nil {
		clientTask := intercept.TaskMethod(req.Method) || req.Method == "tasks/list" || intercept.Member(req.Params, "task") != nil
		if key := a.mintAsk(s, in, pendingAsk{upstream: upstream, id: orig, clientTask: clientTask}); key != "" {
			req.ID = jsontext.Value(key)
			if b, err := json.Marshal(req); err == nil && send(b) {
				return key
			}
			s.takeAsk(key)
			why = "the client's stream is closed or too far behind"
		} else {
			why = "too many requests to the client are awaiting an answer"
		}
	}
	body := intercept.ErrorResponse(orig, &intercept.WireError{Code: intercept.CodeInternalError, Message: req.Method + " not delivered: " + why})
	// The upstream's answer is still being written by this goroutine's
	// caller: the error goes in on its own.
	go a.g.handleMCP(&discard{h: http.Header{}}, a.innerRequest(r, http.MethodPost, upstream, in, body))
	return ""
}

// cancelOut returns msg, an upstream's notifications/cancelled, naming
// the request it withdraws by the id the client knows it by: one this
// upstream asked the client in session s. Nil for any other: the client
// knows the requests relayed to it by ids the virtual server mints, and
// one an upstream names may be another upstream's request, or the
// gateway's approval question, that the client has under that id. A
// sealed ask (aggregate_sealed.go) is kept nowhere to look up, and its
// cancellation is not passed on either.
func (a *aggregator) cancelOut(s *aggSession, upstream string, msg []byte) []byte {
	params := intercept.Member(msg, "params")
	rid := intercept.Member(params, "requestId")
	if rid == nil {
		return nil
	}
	key := intercept.IDKeyOf(rid)
	minted := ""
	s.mu.Lock()
	for k, pa := range s.asks {
		if pa.upstream == upstream && intercept.IDKeyOf(pa.id) == key {
			minted = k
			break
		}
	}
	s.mu.Unlock()
	if minted == "" {
		return nil
	}
	params, err := intercept.WithMember(params, "requestId", jsontext.Value(minted))
	if err != nil {
		return nil
	}
	out, err := intercept.WithMember(msg, "params", params)
	if err != nil {
		return nil
	}
	return out
}

// answer takes a client's response to a relayed request back to the
// upstream that asked, under the upstream's id.
func (a *aggregator) answer(w http.ResponseWriter, r *http.Request, resp rpcResponse) {
	s := a.session(w, r, nil)
	if s == nil {
		return
	}
	key := string(resp.ID)
	pa, ok := s.peekAsk(key)
	s.mu.Lock()
	in := s.inner[pa.upstream]
	s.mu.Unlock()
	sealed := false
	if !ok {
		// Relayed by another replica: the sealed id says where to.
		pa, in, ok = a.openAsk(s, key)
		sealed = ok
	}
	if !ok && s.wasAsked(key) {
		// Asked, but its exchange ended first (the gateway withdrew its
		// approval question, or the call's client left): as a route
		// takes a late answer to its own question, the answer is taken
		// and goes nowhere. go-sdk's client closes the session when an
		// answer it sends is refused.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !ok || in == nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, noAsk(key))
		return
	}
	if !pa.clientTask && len(resp.Result) > 0 {
		// Checked before the request is taken: an answer refused for its
		// related task can be sent again.
		rel, err := a.relatedTaskIn(r, s, intercept.Member(resp.Result, "_meta"), nil)
		if err == nil && rel != nil && rel.upstream != pa.upstream {
			err = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
				"related task %q is a task of upstream %q; this answer goes to %q, which asked", rel.upstream+"/"+rel.own, rel.upstream, pa.upstream)}
		}
		if err != nil {
			writeJSONRPCError(w, http.StatusBadRequest, nil, err)
			return
		}
		resp.Result = relatedTaskFor(resp.Result, rel, pa.upstream)
	}
	if !sealed {
		if _, ok := s.takeAsk(key); !ok { // another answer took it meanwhile
			writeJSONRPCError(w, http.StatusBadRequest, nil, noAsk(key))
			return
		}
	}
	resp.ID = pa.id
	body, err := json.Marshal(resp)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: err.Error()})
		return
	}
	// Decided in the client's session, as the call that was asked: in the
	// inner session of the upstream that asked, which read nothing, the
	// answer (a carry) reached an upstream the session had closed
	// (TestAttackVirtualAnswerOutsideSession).
	rec := &buffered{h: http.Header{}}
	a.g.handleMCP(rec, a.innerRequest(s.policySees(r), http.MethodPost, pa.upstream, in, body))
	if rec.body.Len() > 0 {
		writeJSON(w, rec.status(), rec.body.Bytes())
		return
	}
	w.WriteHeader(rec.status())
}

// noAsk answers a client's answer to no request awaiting one.
func noAsk(key string) error {
	return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "no request with id " + key + " awaits an answer on this session"}
}

// broadcast sends a client notification to every upstream the session has
// started (notifications/roots/list_changed: each may have asked for roots).
func (a *aggregator) broadcast(r *http.Request, s *aggSession, body []byte) {
	s.mu.Lock()
	inner := innerList(s.inner)
	s.mu.Unlock()
	rel := relatedTaskOf(r)
	for _, in := range inner {
		b := body
		if rel != nil { // each upstream's own id, or none
			b = withMember(body, "params", relatedTaskFor(intercept.Member(body, "params"), rel, in.upstream))
		}
		a.g.handleMCP(&discard{h: http.Header{}}, a.innerRequest(r, http.MethodPost, in.upstream, in.sess, b))
	}
}

// outerIDKey holds, in an inner call's context, the JSON id of the
// client's request it serves.
type outerIDKey struct{}

// pendingCall is an inner call in flight: where it went and its id there.
type pendingCall struct {
	upstream string
	in       *innerSession
	id       int64
	// marked, when set, makes this no call but the mark of a
	// cancellation that named no call of the session, at that time
	// (markCancelled).
	marked time.Time
}

// cancelGrace is how long a call whose client went away stays known: a
// client that gives up closes its request first and sends
// notifications/cancelled after (a disconnection alone is no cancellation).
const cancelGrace = 30 * time.Second

// track registers the inner call serving the client's request outer until
// the returned func is called (or, if the client went away or the call
// stays held for approval, cancelGrace after: go-sdk's client answers
// the approval question with an error when its user gives up, takes the
// hold as the answer, and cancels after). cancelled reports that the
// client cancelled the request before (markCancelled): the call must not
// be sent, and nothing is registered.
func (s *aggSession) track(ctx context.Context, outer string, c pendingCall) (untrack func(held bool), cancelled bool) {
	s.mu.Lock()
	if old, ok := s.calls[outer]; ok && !old.marked.IsZero() {
		delete(s.calls, outer)
		if time.Since(old.marked) < cancelMarkTTL {
			s.mu.Unlock()
			return nil, true
		}
	}
	if s.calls == nil {
		s.calls = map[string]pendingCall{}
	}
	s.calls[outer] = c
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		if s.calls[outer] == c {
			delete(s.calls, outer)
		}
		s.mu.Unlock()
	}
	return func(held bool) {
		if held || ctx.Err() != nil {
			time.AfterFunc(cancelGrace, forget)
			return
		}
		forget()
	}, false
}

// markCancelled remembers the client's cancellation of request outer,
// which names no call of the session: its call may still be on its way
// (its POST taken, the tools being listed) and then must not be sent
// (track). Marks last cancelMarkTTL; past maxMarks the oldest goes.
func (s *aggSession) markCancelled(outer string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.calls[outer]; ok && old.marked.IsZero() {
		return
	}
	if s.calls == nil {
		s.calls = map[string]pendingCall{}
	}
	roomForMark(s.calls, now, func(c pendingCall) time.Time { return c.marked })
	s.calls[outer] = pendingCall{marked: now}
}

// errCancelledEarly answers a call its client cancelled before it was
// sent: nobody reads it.
var errCancelledEarly = &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "not sent: the client cancelled this request"}

// cancel passes the client's notifications/cancelled on to the upstream
// serving that request, under the id the upstream knows it by. A request
// this replica does not serve may be a call another replica holds for
// approval (heldshare.go): that is looked up in the shared store, and err
// says the store did not answer.
func (a *aggregator) cancel(r *http.Request, s *aggSession, params jsontext.Value) error {
	id := intercept.Member(params, "requestId")
	s.mu.Lock()
	c, ok := s.calls[string(id)]
	s.mu.Unlock()
	if ok && !c.marked.IsZero() {
		ok = false // a mark: no call
	}
	if !ok && id != nil && a.g.opts.Approver != nil {
		s.markCancelled(string(id)) // its call may be on its way to a hold
	}
	if !ok {
		// (Capabilities too large to seal with the session are not known
		// here: looked up all the same.)
		caps := intercept.Member(s.init, "capabilities")
		if store, shared := a.g.opts.Exchanges.(CallHolds); shared && a.g.sealer != nil && id != nil && (caps == nil || formElicitation(caps)) {
			_, err := a.g.cancelElsewhere(context.WithoutCancel(r.Context()), store, s.id, []string{string(id)}, s.who.agent)
			return err
		}
		return nil // finished, or never ours: nothing to cancel
	}
	p := map[string]any{"requestId": c.id}
	if reason := intercept.StringMember(params, "reason"); reason != "" {
		p["reason"] = reason
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": p})
	if err != nil {
		return nil
	}
	a.g.handleMCP(&discard{h: http.Header{}}, a.innerRequest(r, http.MethodPost, c.upstream, c.in, body))
	return nil
}

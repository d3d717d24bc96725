package gateway

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// The client's ids and a closed upstream. A route rule that closes an
// upstream (intercept's carry.go) lets only plain messages through, but a
// plain message still has an id, a string of the client's choosing of any
// length: {"id":"<secret>","method":"ping"} would hand the upstream what
// the rule closed it to. So is the progress token of a request and the
// requestId a cancellation names. While the upstream is closed to the
// request's client (intercept.Interceptor.Closed, the test its HTTP
// headers are screened by), an exchange is sent with ids and progress
// tokens of the gateway's making instead (swapIDs), and every message of
// the upstream's answer that names them — its responses and errors, the
// progress notifications on its stream — is given the client's back
// (idSwap.restore) before anything else reads it, so the client, and
// everything the gateway records, see what they would have seen. A
// cancellation names the gateway's id for the request it cancels, which
// the session remembers while that request's exchange is open
// (replays.swapped), or, for a request sent before the upstream was
// closed to the client and still waiting, the client's own, which the
// upstream was sent already (hold.asIs, bridgeCall.asIs, relay.swapped);
// one naming anything else cancels nothing the upstream was sent, and is
// not passed on. The client's answers name the
// upstream's own ids, and so must they: an answer under an id no request
// of the upstream's passed on to this client had (askedIDs; an empty
// result, {"id":"<secret>","result":{}}, is plain) is not passed on
// either.
//
// The gateway's ids are random ("sluice-" and 13 characters of base 36 at
// most): a counter would tell the upstream how busy the gateway is, and
// would repeat on another replica serving the same session.

// idSwap is what one exchange sent a closed upstream in place of the
// client's ids and progress tokens. It is read by the exchange's
// goroutine alone.
type idSwap struct {
	msgs []*intercept.Message // the exchange's messages as sent upstream
	body []byte               // and as one body

	ids    map[string]jsontext.Value // the gateway's id key -> the client's id
	tokens map[string]jsontext.Value // the gateway's progress token -> the client's
	// client maps the key of each swapped request's client id to the
	// gateway's id, for the session's cancellations.
	client map[string]jsontext.Value
}

// errNothingSent: every message of the exchange was a cancellation that
// names no request the upstream was sent (see above); none is sent.
var errNothingSent = errors.New("nothing to send: the cancellation names no request the closed upstream was sent")

// newUpstreamID returns a JSON string the gateway sends a closed upstream
// in place of a client's id or progress token.
func newUpstreamID() jsontext.Value {
	b := make([]byte, 0, 24)
	b = append(b, `"sluice-`...)
	b = strconv.AppendUint(b, rand.Uint64(), 36)
	return append(b, '"')
}

// swapIDs returns what msgs, an exchange's messages to a closed upstream
// (a batch when batch), are sent as (see above). upstreamID gives the
// gateway's id for a request of the client's still open on the session,
// by its id key; nil: none is. asked takes the id key of a request the
// upstream sent the client, if it did; nil: none. trace is the trace
// context a single request goes with in params._meta, the gateway's own
// traceparent as a JSON string (tracing.go; nil: none, as for a batch's
// requests), in place of the client's. A message that cannot be rewritten
// is an error; a cancellation of nothing the upstream was sent and an
// answer to nothing it asked are left out, and when nothing is left the
// error is errNothingSent.
func swapIDs(msgs []*intercept.Message, batch bool, upstreamID func(key string) jsontext.Value, asked *askedIDs, trace jsontext.Value) (*idSwap, error) {
	s := &idSwap{msgs: make([]*intercept.Message, 0, len(msgs))}
	if batch {
		trace = nil
	}
	for _, m := range msgs {
		if (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) && !asked.take(m.IDKey()) {
			continue // an answer to nothing asked
		}
		raw, err := s.swap(m, upstreamID, trace)
		if err != nil {
			return nil, err
		}
		if raw == nil {
			continue // a cancellation of nothing sent
		}
		same := &raw[0] == &m.Raw[0]
		if raw, err = gatewaySpelling(raw); err != nil {
			return nil, err
		}
		if same && &raw[0] == &m.Raw[0] {
			s.msgs = append(s.msgs, m)
			continue
		}
		out, err := intercept.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		s.msgs = append(s.msgs, out)
	}
	switch {
	case len(s.msgs) == 0:
		return nil, errNothingSent
	case batch:
		raws := make([]jsontext.Value, len(s.msgs))
		for i, m := range s.msgs {
			raws[i] = m.Raw
		}
		s.body = marshalArray(raws)
	default:
		s.body = s.msgs[0].Raw
	}
	return s, nil
}

// gatewaySpelling returns raw, a message to a closed upstream, in the
// gateway's spelling: its strings with no escape they do not need, and
// the members of its objects in order of their names (RFC 8785's order).
// Which characters a client escaped, in which hex case, and in which order
// it wrote members, were a few bits a character of every plain message.
// Numbers are left as they are: a plain message holds none of the
// client's (its id and progress token are the gateway's), and the id of
// an answer is the upstream's own, to be sent back as it was. raw itself
// when it is spelt so already.
func gatewaySpelling(raw jsontext.Value) (jsontext.Value, error) {
	out := jsontext.Value(bytes.Clone(raw)) // Format writes over what it formats
	if err := out.Format(jsontext.ReorderRawObjects(true), jsontext.EscapeForJS(true)); err != nil {
		return nil, err
	}
	if bytes.Equal(out, raw) {
		return raw, nil
	}
	return out, nil
}

// swap returns m as a closed upstream is sent it: m.Raw itself when
// nothing in it is swapped, nil when it is not sent at all. trace: see
// swapIDs.
func (s *idSwap) swap(m *intercept.Message, upstreamID func(string) jsontext.Value, trace jsontext.Value) (jsontext.Value, error) {
	switch {
	case m.Kind == intercept.KindRequest:
		id := newUpstreamID()
		raw, err := intercept.WithMember(m.Raw, "id", id)
		if err != nil {
			return nil, err
		}
		if s.ids == nil {
			s.ids, s.client = make(map[string]jsontext.Value, 1), make(map[string]jsontext.Value, 1)
		}
		s.ids[string(id)], s.client[m.IDKey()] = m.ID, id
		meta := m.Meta
		if tok := intercept.ValidMember(meta, "progressToken"); tok != nil {
			up := newUpstreamID()
			if meta, err = intercept.WithMember(meta, "progressToken", up); err != nil {
				return nil, err
			}
			if s.tokens == nil {
				s.tokens = make(map[string]jsontext.Value, 1)
			}
			s.tokens[string(up)] = tok
		}
		params := m.Params
		if string(meta) != string(m.Meta) {
			if params, err = intercept.WithMember(params, "_meta", meta); err != nil {
				return nil, err
			}
			if raw, err = intercept.WithMember(raw, "params", params); err != nil {
				return nil, err
			}
		}
		return withGatewayTrace(raw, params, meta, trace)
	case m.Kind == intercept.KindNotification && m.Method == "notifications/cancelled":
		rid := intercept.ValidMember(m.Params, "requestId")
		var up jsontext.Value
		if rid != nil {
			key := intercept.IDKeyOf(rid)
			if up = s.client[key]; up == nil && upstreamID != nil {
				up = upstreamID(key)
			}
		}
		if up == nil {
			return nil, nil
		}
		params, err := intercept.WithMember(m.Params, "requestId", up)
		if err != nil {
			return nil, err
		}
		return intercept.WithMember(m.Raw, "params", params)
	}
	return m.Raw, nil
}

// upstreamID returns the gateway's id for the request of s whose client
// id has key, or nil; nil for a nil s.
func (s *idSwap) upstreamID(key string) jsontext.Value {
	if s == nil {
		return nil
	}
	return s.client[key]
}

// restore returns b, a message (or batch) of the upstream's answer, with
// the client's ids in the responses and errors to the swapped requests
// and the client's tokens in progress notifications naming swapped ones;
// b itself when none is there, or when b is not JSON-RPC (which is not
// passed on as it is: see unreadAnswer and pipeEvents).
func (s *idSwap) restore(b []byte) []byte {
	msgs, batch, err := intercept.Decode(b)
	if err != nil {
		return b
	}
	changed := false
	raws := make([]jsontext.Value, len(msgs))
	for i, m := range msgs {
		raws[i] = m.Raw
		var out jsontext.Value
		switch m.Kind {
		case intercept.KindResponse, intercept.KindError:
			if id := s.ids[m.IDKey()]; id != nil {
				out, err = intercept.WithMember(m.Raw, "id", id)
			}
		case intercept.KindNotification:
			if m.Method != "notifications/progress" {
				break
			}
			tok := intercept.ValidMember(m.Params, "progressToken")
			if c := s.tokens[intercept.IDKeyOf(tok)]; c != nil {
				var params jsontext.Value
				if params, err = intercept.WithMember(m.Params, "progressToken", c); err == nil {
					out, err = intercept.WithMember(m.Raw, "params", params)
				}
			}
		}
		if err != nil {
			return b
		}
		if out != nil {
			raws[i], changed = out, true
		}
	}
	switch {
	case !changed:
		return b
	case batch:
		return marshalArray(raws)
	}
	return raws[0]
}

// swapped records that the requests of s, an open exchange of the
// session, were sent with the gateway's ids.
func (r *replays) swapped(s *idSwap) {
	if len(s.client) == 0 && len(s.tokens) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.upIDs == nil && len(s.client) > 0 {
		r.upIDs = make(map[string]jsontext.Value, len(s.client))
	}
	for k, id := range s.client {
		r.upIDs[k] = id
	}
	if r.upTokens == nil && len(s.tokens) > 0 {
		r.upTokens = make(map[string]jsontext.Value, len(s.tokens))
	}
	for k, tok := range s.tokens {
		r.upTokens[k] = tok
	}
}

// unswapped forgets what swapped recorded of s, its exchange having
// ended.
func (r *replays) unswapped(s *idSwap) {
	if len(s.client) == 0 && len(s.tokens) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, id := range s.client {
		if string(r.upIDs[k]) == string(id) {
			delete(r.upIDs, k)
		}
	}
	for k := range s.tokens {
		delete(r.upTokens, k) // the gateway's tokens are random: no other exchange's
	}
}

// restoreTokens returns b, a message or batch of the session's GET
// stream, with the client's progress token in every progress
// notification under the gateway's token of one of its open exchanges to
// a closed upstream: a server may send a request's progress on the GET
// stream rather than the request's own (mcp-go's does when the POST's
// stream is gone), and the client knows its progress by its own token
// alone.
func (r *replays) restoreTokens(b []byte) []byte {
	r.mu.Lock()
	if len(r.upTokens) == 0 {
		r.mu.Unlock()
		return b
	}
	s := &idSwap{tokens: make(map[string]jsontext.Value, len(r.upTokens))}
	for k, tok := range r.upTokens {
		if bytes.Contains(b, []byte(k)) {
			s.tokens[k] = tok
		}
	}
	r.mu.Unlock()
	if len(s.tokens) == 0 {
		return b
	}
	return s.restore(b)
}

// upstreamID returns the id the upstream knows the session's open
// request whose client id has key by, or nil: the gateway's, or the
// client's own (key itself, in the gateway's spelling) for a request sent
// before the upstream was closed to the client.
func (r *replays) upstreamID(key string) jsontext.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := r.upIDs[key]; id != nil {
		return id
	}
	if h := r.open[key]; h != nil && h.asIs.Load() {
		return jsontext.Value(key)
	}
	return nil
}

// idTable is a connection's memory of the requests it sent a closed
// upstream under the gateway's ids (a /ws, /sse or `sluice wrap` relay's,
// a bridged session's), from when they are sent until their answer comes
// or the client cancels them: an answer, and progress on a request's
// token, may come at any time on the connection. Safe for concurrent use;
// its zero value is empty, and costs restore a load while it is.
type idTable struct {
	// asIs reports whether the connection's request whose client id has
	// key went to the upstream under that id (before it was closed to
	// the client) and still waits: a cancellation of it goes on under
	// that id. Nil: none did. Set before the table is used.
	asIs func(key string) bool

	n atomic.Int64 // len(ids)

	mu     sync.Mutex                // guards the fields below
	ids    map[string]swappedRequest // the gateway's id key -> the request
	client map[string]jsontext.Value // the client's id key -> the gateway's id
	tokens map[string]jsontext.Value // the gateway's progress token -> the client's
	// cancels are the gateway's id keys of the requests the client
	// cancelled, oldest first: a server may still answer one, under the
	// client's id as it would have been, but need not, and past
	// maxCancelsKept the oldest is forgotten.
	cancels []string
	// order are the gateway's id keys of the requests, oldest first (it
	// may name some forgotten since), and bytes the size of their client
	// ids: past maxSwapped or maxSwappedBytes the oldest is forgotten.
	// A bridged session's request stays until its answer when the
	// client's POST has gone: one the upstream never answers would stay
	// for good, ids of any length a client sends without end.
	order []string
	bytes int
}

// maxCancelsKept bounds the cancelled requests an idTable remembers.
const maxCancelsKept = 256

// maxSwapped and maxSwappedBytes bound the requests an idTable remembers
// and the size of their client ids, as maxConnPending and
// maxConnPendingBytes bound a relay's.
const (
	maxSwapped      = 1024
	maxSwappedBytes = 4 << 20
)

// swappedRequest is a request an idTable holds.
type swappedRequest struct {
	id    jsontext.Value // the client's
	key   string         // its id key
	token string         // the gateway's progress token for it, if any
}

// send returns b, the client's messages (a batch when batch) as the
// gateway forwards them, rewritten for a closed upstream (swapIDs) and
// remembered until answered; errNothingSent when none is left to send.
// asked and trace: see swapIDs.
func (t *idTable) send(b []byte, batch bool, asked *askedIDs, trace jsontext.Value) ([]byte, error) {
	msgs, _, err := intercept.Decode(b)
	if err != nil {
		return nil, err
	}
	s, err := swapIDs(msgs, batch, t.upstreamID, asked, trace)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		if key, ok := cancelledID(m); ok {
			t.cancelled(intercept.IDKeyOf(jsontext.Value(key)))
		}
	}
	if len(s.client) == 0 {
		return s.body, nil
	}
	if t.ids == nil {
		t.ids, t.client, t.tokens = make(map[string]swappedRequest), make(map[string]jsontext.Value), make(map[string]jsontext.Value)
	}
	for _, m := range s.msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		// A copy: the client's id is a slice of its whole message.
		req := swappedRequest{id: bytes.Clone(s.ids[m.IDKey()])}
		req.key = intercept.IDKeyOf(req.id)
		if tok := intercept.ValidMember(m.Meta, "progressToken"); tok != nil {
			req.token = string(tok)
			t.tokens[req.token] = bytes.Clone(s.tokens[req.token])
		}
		t.forgetClient(req.key) // a request reusing an id: the older is not answered now
		t.ids[m.IDKey()], t.client[req.key] = req, m.ID
		t.order = append(t.order, m.IDKey())
		t.bytes += len(req.id) + len(t.tokens[req.token])
		for len(t.ids) > maxSwapped || t.bytes > maxSwappedBytes {
			t.forget(t.order[0])
			t.order[0] = ""
			t.order = t.order[1:]
		}
		if len(t.order) > 2*maxSwapped {
			// Keys of requests answered since.
			t.order = slices.DeleteFunc(t.order, func(k string) bool { _, ok := t.ids[k]; return !ok })
		}
	}
	t.n.Store(int64(len(t.ids)))
	return s.body, nil
}

// upstreamID returns the id the upstream knows the request whose client
// id has key by, or nil: the gateway's, or the client's own (asIs).
func (t *idTable) upstreamID(key string) jsontext.Value {
	t.mu.Lock()
	up := t.client[key]
	t.mu.Unlock()
	if up == nil && t.asIs != nil && t.asIs(key) {
		return jsontext.Value(key)
	}
	return up
}

// forgetClient forgets the request whose client id has key; t.mu is held.
func (t *idTable) forgetClient(key string) {
	if up, ok := t.client[key]; ok {
		t.forget(intercept.IDKeyOf(up))
	}
}

// cancelled notes that the client cancelled the request whose client id
// has key; t.mu is held.
func (t *idTable) cancelled(key string) {
	up, ok := t.client[key]
	if !ok {
		return
	}
	t.cancels = append(t.cancels, intercept.IDKeyOf(up))
	if len(t.cancels) > maxCancelsKept {
		t.forget(t.cancels[0])
		t.cancels[0] = ""
		t.cancels = t.cancels[1:]
	}
}

// forget forgets the request whose gateway's id has key; t.mu is held.
func (t *idTable) forget(key string) {
	if req, ok := t.ids[key]; ok {
		t.bytes -= len(req.id) + len(t.tokens[req.token])
		delete(t.ids, key)
		delete(t.client, req.key)
		delete(t.tokens, req.token)
		t.n.Store(int64(len(t.ids)))
	}
}

// restore returns b, a message (or batch) from the upstream, with the
// client's ids and progress tokens in place of the gateway's (idSwap's
// restore); a response or error forgets its request. b itself when t is
// empty or nothing in b is the gateway's.
func (t *idTable) restore(b []byte) []byte {
	if t.n.Load() == 0 {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ids) == 0 {
		return b
	}
	msgs, _, err := intercept.Decode(b)
	if err != nil {
		return b
	}
	s := &idSwap{ids: make(map[string]jsontext.Value), tokens: make(map[string]jsontext.Value)}
	for _, m := range msgs {
		switch m.Kind {
		case intercept.KindResponse, intercept.KindError:
			if req, ok := t.ids[m.IDKey()]; ok {
				s.ids[m.IDKey()] = req.id
				t.forget(m.IDKey())
			}
		case intercept.KindNotification:
			tok := intercept.IDKeyOf(intercept.ValidMember(m.Params, "progressToken"))
			if c, ok := t.tokens[tok]; ok {
				s.tokens[tok] = c
			}
		}
	}
	if len(s.ids) == 0 && len(s.tokens) == 0 {
		return b
	}
	return s.restore(b)
}

// closedIDs reports whether what x sends its bridged upstream goes as
// the session's idTable sends it: the upstream is closed to x's client,
// and x holds something the client chose (carriesIDs).
func (g *Gateway) closedIDs(ctx context.Context, x *exchange) bool {
	return carriesIDs(x.msgs) && g.ic.Closed(ctx, x.callContext())
}

// closedSpelling returns msg, what x sends the shared connection of a
// bridged upstream (stateless.go, whose ids are the gateway's always), in
// the gateway's spelling (gatewaySpelling) when the upstream is closed to
// x's client; msg itself otherwise, and when it is spelt so already
// (which costs no closed check).
func (g *Gateway) closedSpelling(ctx context.Context, x *exchange, msg []byte) ([]byte, error) {
	spelt, err := gatewaySpelling(msg)
	if err != nil {
		return nil, err
	}
	if len(msg) == 0 || &spelt[0] == &msg[0] || !g.ic.Closed(ctx, x.callContext()) {
		return msg, nil
	}
	return spelt, nil
}

// carriesIDs reports whether any of msgs holds what a closed upstream is
// sent otherwise than the client sent it, or checked: an id or token of
// the client's (a request, an answer, a cancellation), or a spelling of
// the client's (gatewaySpelling; a client's notification is spelt so
// already, and costs no closed check).
func carriesIDs(msgs []*intercept.Message) bool {
	for _, m := range msgs {
		if m.Kind != intercept.KindNotification {
			return true
		}
		if _, ok := cancelledID(m); ok {
			return true
		}
		if out, err := gatewaySpelling(m.Raw); err != nil || &out[0] != &m.Raw[0] {
			return true
		}
	}
	return false
}

// askedIDs remembers the ids of the requests an upstream sent a client
// through the gateway, until the client answers them: the only ids a
// client's answer to a closed upstream may name. At most maxAskedIDs,
// the oldest forgotten past that (an upstream asks a client few things at
// once). Safe for concurrent use; its zero value is empty.
type askedIDs struct {
	mu    sync.Mutex // guards the fields below
	ids   map[string]bool
	order []string // oldest first; may name ids answered since
}

// maxAskedIDs bounds the requests an askedIDs remembers.
const maxAskedIDs = 256

// add remembers the id key of a request passed on to the client.
func (a *askedIDs) add(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil {
		a.ids = make(map[string]bool)
	}
	if a.ids[key] {
		return
	}
	a.ids[key] = true
	a.order = append(a.order, key)
	for len(a.ids) > maxAskedIDs || len(a.order) > 2*maxAskedIDs {
		delete(a.ids, a.order[0])
		a.order[0] = ""
		a.order = a.order[1:]
	}
}

// take reports whether the request with id key was passed on to the
// client and not answered yet, and forgets it; false for a nil a.
func (a *askedIDs) take(key string) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := a.ids[key]
	delete(a.ids, key)
	return ok
}

// addRequests remembers the requests among msgs, an upstream's message
// passed on to the client.
func (a *askedIDs) addRequests(msgs []*intercept.Message) {
	for _, m := range msgs {
		if m.Kind == intercept.KindRequest {
			a.add(m.IDKey())
		}
	}
}

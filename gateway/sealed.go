package gateway

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/aead"
	"github.com/sluicehq/sluice/telemetry"

	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/inventory"
)

// Sealed session ids let any replica serve any request of a session.
//
// With Options.SessionKeys set, the Mcp-Session-Id the gateway gives a
// 2025-era client on an HTTP upstream is the session itself, sealed with
// AES-256-GCM under the first key: route, upstream session id, owner and
// negotiated version. A replica that has not seen the id opens it with any
// of the keys (the current one and those being rotated out), checks the
// route and the caller, and serves the request against the same upstream
// session, which every replica can reach. Nothing is shared but the keys
// (and, with Options.Exchanges, what the session's exchanges leave for one
// another: replayshare.go);
// a session the upstream has ended is ended everywhere (its requests come
// back 404 from the upstream). What stays on the replica that has it:
// answers to the gateway's own approval questions (client_may_answer).
//
// A session on a stdio, WebSocket or SSE upstream is a connection of one
// replica and cannot move: its id is sealed too, naming the replica, so
// that another replica answers with a clear 404 saying so instead of
// "unknown session".
//
// A sealed id shows its issue time (base 36 Unix seconds, after the
// prefix), which its sealing binds: every replica refuses it past
// Options.SessionMaxAge, with 404, without opening it or keeping
// anything per session. A copy of the id (a log, a proxy, a stolen
// header) is otherwise good until its key is rotated out, or its client
// ends the session (sessionends.go).

// sealedPrefix marks a sealed id, and its version: s2 ids carry their
// issue time (s1 ids, which did not, are unknown sessions).
const sealedPrefix = "s2."

type sealedSession struct {
	Route    string `json:"r"`
	Upstream string `json:"u,omitempty"` // the upstream's Mcp-Session-Id (HTTP)
	Header   string `json:"h,omitempty"`
	Agent    string `json:"a,omitempty"`
	Client   string `json:"c,omitempty"` // principal.client
	Version  string `json:"v,omitempty"`
	Elicit   bool   `json:"e,omitempty"`
	// Caps are the capabilities the client declared at initialize
	// (session.caps), unless longer than maxSealedCaps.
	Caps    jsontext.Value `json:"k,omitzero"`
	Replica string         `json:"p,omitempty"` // set for a session bound to one replica (bridged upstreams)
	Nonce   string         `json:"n"`           // random: two sessions never share an id
}

type sealer struct {
	aeads   []cipher.AEAD
	replica string
	// ended are the ids of sealed sessions a client ended here with
	// DELETE (their SHA-256), which no request may bring back: the id
	// itself stays valid under the keys. Bounded: past maxEnded, the
	// oldest are forgotten. Other replicas, and this one restarted, know
	// them through the shared store (sessionends.go), where there is one.
	ended *lru.Cache[[32]byte, struct{}]
	// maxAge is how long after its issue time a sealed session id is
	// served (0: no bound); now is the clock.
	maxAge time.Duration
	now    func() time.Time
}

// maxEnded bounds the ended session ids a replica remembers (about 100
// bytes each).
const maxEnded = 100_000

// end marks a sealed session id as ended by its client.
func (s *sealer) end(id string) { s.ended.Add(sha256.Sum256([]byte(id)), struct{}{}) }

// isEnded reports whether id was ended here.
func (s *sealer) isEnded(id string) bool { return s.ended.Contains(sha256.Sum256([]byte(id))) }

func newSealer(keys [][]byte) (*sealer, error) {
	ended, err := lru.New[[32]byte, struct{}](maxEnded)
	if err != nil {
		return nil, err
	}
	s := &sealer{ended: ended, maxAge: DefaultSessionMaxAge, now: time.Now}
	if s.aeads, err = aead.FromKeys(keys, "session key"); err != nil {
		return nil, err
	}
	var r [9]byte
	_, _ = rand.Read(r[:])
	s.replica = base64.RawURLEncoding.EncodeToString(r[:])
	return s, nil
}

var sealedAD = []byte("sluice session id v1")

func (s *sealer) seal(st sealedSession) string {
	var n [6]byte
	_, _ = rand.Read(n[:])
	st.Nonce = base64.RawURLEncoding.EncodeToString(n[:])
	return s.sealIssued(sealedPrefix, sealedAD, s.now(), st)
}

func (s *sealer) open(id string) (sealedSession, bool) {
	var st sealedSession
	if len(id) > len(sealedPrefix)+4096 {
		return st, false
	}
	ok := s.openIssued(sealedPrefix, sealedAD, id, &st)
	return st, ok
}

// sealIssued seals v as sealAny does, behind prefix and its issue time
// at, which the id shows and the sealing binds (in the additional data).
func (s *sealer) sealIssued(prefix string, ad []byte, at time.Time, v any) string {
	t := strconv.FormatInt(at.Unix(), 36)
	return s.sealAny(prefix+t+".", issuedAD(ad, t), v)
}

// openIssued opens what sealIssued sealed into v. An id whose time was
// altered, or spelt otherwise, does not open.
func (s *sealer) openIssued(prefix string, ad []byte, id string, v any) bool {
	t, ok := issuedPart(prefix, id)
	return ok && s.openAny(prefix+t+".", issuedAD(ad, t), id, v)
}

func issuedAD(ad []byte, t string) []byte {
	out := make([]byte, 0, len(ad)+1+len(t))
	return append(append(append(out, ad...), 0), t...)
}

// issuedPart returns the issue time of id, behind prefix, as it is spelt.
func issuedPart(prefix, id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '.')
	if i <= 0 || i > 13 { // 13 base 36 digits hold any int64
		return "", false
	}
	return rest[:i], true
}

// expired reports whether id, a sealed session id (a route's or a
// virtual server's), was issued longer than maxAge ago. It does not open
// the id: an id with an altered time is not this replica's session and
// does not open either. Anything else is not expired (and is looked up
// as before).
func (s *sealer) expired(id string) bool {
	left, ok := s.left(id)
	return ok && left < 0
}

// left is how long sealed session id has before it expires; false if it
// does not (not a sealed id, or no maximum age).
func (s *sealer) left(id string) (time.Duration, bool) {
	if s == nil || s.maxAge <= 0 {
		return 0, false
	}
	t, ok := issuedPart(sealedPrefix, id)
	if !ok {
		if t, ok = issuedPart(virtualPrefix, id); !ok {
			return 0, false
		}
	}
	sec, err := strconv.ParseInt(t, 36, 64)
	if err != nil {
		return 0, false
	}
	return s.maxAge - s.now().Sub(time.Unix(sec, 0)), true
}

// untilExpiry returns r with a context that ends when session id
// expires (sealer.left), so that a stream opened before its expiry (a
// GET stream) is not served past it: its client's next request gets the
// 404 of an expired session and starts a new one. Where other replicas
// serve the session (SessionEnds), the context also ends when it was
// ended through one of them (endedElsewhere), and live, not nil then, is
// to be called before each message the stream delivers: an error means
// the session ended, or the store could not say, and the message must
// not go. stop releases the timer.
func (g *Gateway) untilExpiry(r *http.Request, id string) (_ *http.Request, stop func(), live func() error) {
	ctx, cancel := context.WithCancel(r.Context())
	if left, ok := g.sealer.left(id); ok {
		ctx, cancel = context.WithTimeout(r.Context(), max(left, 0))
	}
	return r.WithContext(ctx), cancel, g.whileLive(ctx, cancel, id)
}

// untilEnded is untilExpiry's ending through another replica alone, for
// the event stream answering a call: one asked before the session ended
// there carried, after, what the upstream sent about the call, its
// requests to the user among them (elicitation/create), to whoever held
// the stream (TestAttackEndedSessionPOSTStreamOtherReplica).
func (g *Gateway) untilEnded(ctx context.Context, id string) (_ context.Context, stop func(), live func() error) {
	ctx, cancel := context.WithCancel(ctx)
	return ctx, cancel, g.whileLive(ctx, cancel, id)
}

// whileLive returns what says whether session id, whose stream's context
// is ctx, goes on, cancelling ctx when not, and ends ctx once it does
// not (endedElsewhere); nil where no other replica may end it.
func (g *Gateway) whileLive(ctx context.Context, cancel context.CancelFunc, id string) func() error {
	if !g.othersServe() || g.sessionEndsStore() == nil {
		return nil
	}
	live := func() error {
		ended, err := g.ended(ctx, id, true)
		if err == nil && ended {
			err = errEndedElsewhere
		}
		if err != nil {
			cancel()
		}
		return err
	}
	go g.endedElsewhere(ctx, live)
	return live
}

// sessionExpired is the error of a request whose sealed session id is
// past its maximum age.
type sessionExpired struct{ maxAge time.Duration }

func (e sessionExpired) Error() string {
	return fmt.Sprintf("session expired: a session is served for at most %s after initialize (session_max_age); start a new session with initialize", e.maxAge)
}

func (s *sealer) errSessionExpired() error { return sessionExpired{s.maxAge} }

// writeSessionGone answers a request whose session is not here (ended,
// expired, unknown, another route's or agent's): 404, which the MCP
// specification has a client take as its session gone, and start a new
// one. The body is the reason as text, not a JSON-RPC error: go-sdk's
// client (v1.8) reads a JSON-RPC error in a 404 as the request refused,
// the session going on, and only a 404 without one as its session gone
// (ErrSessionMissing); mcp-go's and the TypeScript SDK's go by the status.
func writeSessionGone(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	msg := err.Error()
	if we, ok := errors.AsType[*intercept.WireError](err); ok {
		msg = we.Message
	}
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, msg+"\n")
}

// expire lets go of session id, expired (sealer.expired), if it is here,
// and returns the error to answer with. No replica serves it any more:
// what policy keeps under it goes too.
func (g *Gateway) expire(id string) error {
	if s := g.sessions.remove(id); s != nil {
		g.endSession(s)
		if g.opts.OnSessionEnd != nil && s.upstreamID != "" {
			g.opts.OnSessionEnd(telemetry.SessionRef(s.id)) // endSession leaves it to a DELETE, which cannot come now
		}
	}
	return g.sealer.errSessionExpired()
}

// sessionID is the id of a new session: sealed when keys are configured.
func (g *Gateway) sessionID(st sealedSession) string {
	if g.sealer == nil {
		return newSessionID()
	}
	if st.Upstream == "" {
		st.Replica = g.sealer.replica
	}
	return g.sealer.seal(st)
}

var errSessionElsewhere = errors.New("session bound to another replica")

// maxSealedCaps bounds the client capabilities a sealed session id
// carries: the id goes in a header on every request. Past it the
// capabilities are cut to the members a capability set is made of
// (sealedCapMembers), and past it still to the smallest that make the
// client's capability set (inventory.SetCapabilities), its extensions as
// one word if their names alone are too long.
const maxSealedCaps = 512

// sealedCapMembers are the client capabilities the inventory tells
// capability sets apart by (inventory.CapabilitySet): the others
// (experimental, names of the client's making) are what a sealed id
// leaves out first.
var sealedCapMembers = []string{"elicitation", "extensions", "roots", "sampling", "tasks"}

// sealableCaps returns caps if a sealed id may carry them, else caps cut
// to sealedCapMembers if it may carry those, else the smallest with the
// same capability set. Before, a client declaring a large experimental
// member had its lists on another replica taken for a client's declaring
// nothing: the tools listed to it for its elicitation were drift
// (TestCapabilitySetOfAdoptedSessionLargeCaps); and so did one declaring
// extensions whose names were longer than the bound
// (TestCapabilitySetOfAdoptedSessionHugeCaps).
func sealableCaps(caps jsontext.Value) jsontext.Value {
	if len(caps) <= maxSealedCaps {
		return caps
	}
	cut := jsontext.Value("{")
	for _, name := range sealedCapMembers {
		v := intercept.ValidMember(caps, name)
		if v == nil {
			continue
		}
		if len(cut) > 1 {
			cut = append(cut, ',')
		}
		cut, _ = jsontext.AppendQuote(cut, name)
		cut = append(append(cut, ':'), v...)
	}
	cut = append(cut, '}')
	if len(cut) <= maxSealedCaps {
		return cut
	}
	set := inventory.CapabilitySet(caps)
	if small := inventory.SetCapabilities(set, false); len(small) <= maxSealedCaps {
		return small
	}
	// Every word but the extensions' names fits (SetCapabilities).
	return inventory.SetCapabilities(set, true)
}

// adopt serves a sealed session this replica has not seen: it checks the
// route and the caller as for a known session and enters it in the table
// (counted against the session limits like a new one).
func (g *Gateway) adopt(ctx context.Context, id string, rt *route, c claim, client string) (*session, error) {
	st, ok := g.sealer.open(id)
	if !ok || g.sealer.isEnded(id) {
		return nil, nil
	}
	if st.Route != rt.up.Name {
		g.refusals().refused("streamable-http", rt.up.Name, id, principal{header: st.Header, agent: st.Agent}, c, errors.New("session opened on route "+st.Route))
		return nil, nil
	}
	owner := principal{header: st.Header, agent: st.Agent, client: st.Client}
	if !owner.admits(c) {
		g.refusals().refused("streamable-http", rt.up.Name, id, owner, c, errors.New("session of another agent"))
		return nil, nil
	}
	if st.Upstream == "" || rt.url == nil {
		if st.Replica != g.sealer.replica {
			return nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
				"session not found: it belongs to another replica of the gateway, where upstream %q runs as a local process or connection that cannot move; send this session's requests to that replica (session affinity on %s) or start a new session", rt.up.Name, hdrSession)}
		}
		return nil, nil
	}
	// Ended through another replica, or before this one restarted
	// (sessionends.go)?
	if ended, err := g.ended(ctx, id, true); ended || err != nil {
		return nil, err
	}
	l, err := g.limits.admit(string(TransportStreamableHTTP), owner.agent, client)
	if err != nil {
		return nil, err
	}
	sess := &session{id: id, route: rt.up.Name, upstreamID: st.Upstream, owner: owner, version: st.Version, elicitForm: st.Elicit, caps: st.Caps, lease: l}
	got, err := g.sessions.addOnce(sess)
	if err != nil || got != sess {
		l.release() // an error, or another request adopted it first
	}
	return got, err
}

// addOnce adds s unless a session with its id is there already, and
// returns the one in the table.
func (t *sessionTable) addOnce(s *session) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.m[s.id]; old != nil {
		return old, nil
	}
	if len(t.m) >= t.max {
		return nil, errTooManySessions
	}
	s.lastUsed.Store(t.now().UnixNano())
	t.m[s.id] = s
	return s, nil
}

// writeSessionError answers a request whose session was not found: 404
// (writeSessionGone), with err's message when there is one (a session that
// cannot move here, one expired), a limit's answer for a limit.
func writeSessionError(w http.ResponseWriter, id jsontext.Value, err error) {
	if _, ok := errors.AsType[errEndsUnchecked](err); ok {
		writeJSONRPCError(w, http.StatusServiceUnavailable, id, errEndUnchecked)
		return
	}
	if le, ok := asLimitError(err); ok {
		writeLimitError(w, id, le)
		return
	}
	if err == nil {
		err = errNoSession
	}
	writeSessionGone(w, err)
}

package gateway

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/intercept"
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

// sealedPrefix marks a sealed id, and its version.
const sealedPrefix = "s1."

type sealedSession struct {
	Route    string `json:"r"`
	Upstream string `json:"u,omitempty"` // the upstream's Mcp-Session-Id (HTTP)
	Header   string `json:"h,omitempty"`
	Agent    string `json:"a,omitempty"`
	Client   string `json:"c,omitempty"` // principal.client
	Version  string `json:"v,omitempty"`
	Elicit   bool   `json:"e,omitempty"`
	Replica  string `json:"p,omitempty"` // set for a session bound to one replica (bridged upstreams)
	Nonce    string `json:"n"`           // random: two sessions never share an id
}

type sealer struct {
	aeads   []cipher.AEAD
	replica string
	// ended are the ids of sealed sessions a client ended here with
	// DELETE (their SHA-256), which no request may bring back: the id
	// itself stays valid under the keys. Bounded: past maxEnded, the
	// oldest are forgotten. Another replica does not know them; there a
	// replayed id reaches an upstream that was told the session ended.
	ended *lru.Cache[[32]byte, struct{}]
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
	s := &sealer{ended: ended}
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("session key %d is %d bytes, want 32 (AES-256)", i+1, len(k))
		}
		b, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(b)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, a)
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
	return s.sealAny(sealedPrefix, sealedAD, st)
}

func (s *sealer) open(id string) (sealedSession, bool) {
	var st sealedSession
	if len(id) > len(sealedPrefix)+4096 {
		return st, false
	}
	ok := s.openAny(sealedPrefix, sealedAD, id, &st)
	return st, ok
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

// adopt serves a sealed session this replica has not seen: it checks the
// route and the caller as for a known session and enters it in the table
// (counted against the session limits like a new one).
func (g *Gateway) adopt(id string, rt *route, c claim, client string) (*session, error) {
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
	l, err := g.limits.admit(string(TransportStreamableHTTP), owner.agent, client)
	if err != nil {
		return nil, err
	}
	sess := &session{id: id, route: rt.up.Name, upstreamID: st.Upstream, owner: owner, version: st.Version, elicitForm: st.Elicit, lease: l}
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
	s.lastUsed = t.now()
	t.m[s.id] = s
	return s, nil
}

// writeSessionError answers a request whose session was not found: 404,
// with err's message when there is one (a session that cannot move here),
// a limit's answer for a limit.
func writeSessionError(w http.ResponseWriter, id jsontext.Value, err error) {
	if le, ok := asLimitError(err); ok {
		writeLimitError(w, id, le)
		return
	}
	if err == nil {
		err = errNoSession
	}
	writeJSONRPCError(w, http.StatusNotFound, id, err)
}

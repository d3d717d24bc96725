package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Virtual-server sessions across replicas. With Options.SessionKeys set,
// a virtual server's Mcp-Session-Id is its session, sealed like a route's
// (sealed.go) under its own label: the virtual server, the principal, the
// negotiated version, the client's initialize params and the session it
// holds on each upstream's route — opened at initialize, and themselves
// sealed route sessions any replica can serve (HTTP upstreams). A replica
// that has not seen the id opens it, checks the virtual server and the
// caller, and goes on. The ids of requests relayed to the client are sealed
// too (upstream, its session, its id), so the client's answer may reach any
// replica. What stays on one replica: the GET stream and its
// notifications, an upstream first used after initialize (it was down),
// and notifications/cancelled for a call served elsewhere.

// virtualPrefix marks a sealed virtual-server session id, which carries
// its issue time as a route's (sealed.go); v1 ids did not.
const virtualPrefix = "v2."

var virtualAD = []byte("sluice virtual session v1")

type sealedVirtual struct {
	Virtual string                   `json:"s"`
	Owner   string                   `json:"o,omitempty"`
	Header  string                   `json:"h,omitempty"` // aggSession.who
	Agent   string                   `json:"a,omitempty"`
	Client  string                   `json:"c,omitempty"`
	Version string                   `json:"v"`
	Init    jsontext.Value           `json:"i,omitempty"`
	Inner   map[string]sealedUpInner `json:"u,omitempty"`
	Nonce   string                   `json:"n"`
}

type sealedUpInner struct {
	ID      string `json:"i"`
	Version string `json:"v,omitempty"`
}

// sealAny seals v under the sealer's first key with ad, behind prefix.
func (s *sealer) sealAny(prefix string, ad []byte, v any) string {
	plain, _ := json.Marshal(v)
	a := s.aeads[0]
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	return prefix + base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, ad))
}

// openAny opens what sealAny sealed into v.
func (s *sealer) openAny(prefix string, ad []byte, id string, v any) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) > 16<<10 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != rest {
		// One spelling only: the decoder skips line breaks and the spare
		// bits of the last character, and what the gateway keeps about a
		// session (the table, route memory, ended ids) is keyed by the
		// id's string.
		return false
	}
	for _, a := range s.aeads {
		if len(b) < a.NonceSize() {
			continue
		}
		if plain, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], ad); err == nil {
			return json.Unmarshal(plain, v) == nil
		}
	}
	return false
}

// sealSession opens the session's inner sessions on every upstream (in
// parallel, each bounded by listTimeout) and returns its sealed id.
func (a *aggregator) sealSession(r *http.Request, s *aggSession) string {
	// Issued before its inner sessions are: it never outlives them
	// (SessionMaxAge).
	at := a.g.sealer.now()
	var wg sync.WaitGroup
	for _, u := range a.vs.Upstreams {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), a.listTimeout)
			defer cancel()
			_, _ = a.inner(r.WithContext(ctx), s, u) // one that is down is opened later, here
		})
	}
	wg.Wait()
	st := sealedVirtual{Virtual: a.vs.Name, Owner: s.owner, Header: s.who.header, Agent: s.who.agent, Client: s.who.client, Version: s.version, Init: sealableInit(s.init), Inner: map[string]sealedUpInner{}, Nonce: newSessionID()[:8]}
	s.mu.Lock()
	for u, in := range s.inner {
		st.Inner[u] = sealedUpInner{ID: in.id, Version: in.version}
	}
	s.mu.Unlock()
	return a.g.sealer.sealIssued(virtualPrefix, virtualAD, at, st)
}

// adopt serves a sealed session this replica has not seen, if id is one
// of this virtual server's, the caller is its owner, and its client has
// not ended it (sessionends.go: err says that could not be checked).
func (a *aggregator) adopt(r *http.Request, id string) (*aggSession, error) {
	if a.g.sealer == nil {
		return nil, nil
	}
	var st sealedVirtual
	if a.g.sealer.isEnded(id) || !a.g.sealer.openIssued(virtualPrefix, virtualAD, id, &st) || st.Virtual != a.vs.Name || st.Owner != owner(r) {
		return nil, nil
	}
	if ended, err := a.g.ended(r.Context(), id, true); ended || err != nil {
		return nil, err
	}
	s := &aggSession{id: id, owner: st.Owner, who: principal{header: st.Header, agent: st.Agent, client: st.Client}, client: clientAddr(r), version: st.Version, init: st.Init, inner: map[string]*innerSession{}}
	for u, in := range st.Inner {
		s.inner[u] = &innerSession{id: in.ID, version: in.Version}
	}
	s.last.Store(a.now())
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.sessions[id]; old != nil {
		return old, nil
	}
	if status, _ := a.fullLocked(s); status != 0 {
		return nil, nil // counted like a new session: past a limit, not served here
	}
	a.sessions[id] = s
	return s, nil
}

// askPrefix starts a sealed relayed-request id.
const askPrefix = `"sluice-ask-s.`

var askAD = []byte("sluice relayed request v1")

type sealedAsk struct {
	Session  string         `json:"s"` // the outer session's id, so no other session can answer
	Upstream string         `json:"u"`
	Inner    string         `json:"i"`
	ID       jsontext.Value `json:"d"`
	// ClientTask is pendingAsk.clientTask.
	ClientTask bool `json:"t,omitempty"`
}

// fingerprint names a session in a sealed ask id without carrying it.
func fingerprint(id string) string {
	h := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// sealAsk is the id under which a request from upstream (its session in,
// its id) is relayed to the client of session s: one any replica can
// route the answer back with.
func (a *aggregator) sealAsk(s *aggSession, in *innerSession, pa pendingAsk) string {
	return askPrefix + a.g.sealer.sealAny("", askAD, sealedAsk{Session: fingerprint(s.id), Upstream: pa.upstream, Inner: in.id, ID: pa.id, ClientTask: pa.clientTask}) + `"`
}

// openAsk reads a sealed ask id of session s.
func (a *aggregator) openAsk(s *aggSession, key string) (pendingAsk, *innerSession, bool) {
	if a.g.sealer == nil || !strings.HasPrefix(key, askPrefix) || !strings.HasSuffix(key, `"`) {
		return pendingAsk{}, nil, false
	}
	var st sealedAsk
	if !a.g.sealer.openAny("", askAD, strings.TrimSuffix(strings.TrimPrefix(key, askPrefix), `"`), &st) || st.Session != fingerprint(s.id) {
		return pendingAsk{}, nil, false
	}
	s.mu.Lock()
	in := s.inner[st.Upstream]
	s.mu.Unlock()
	if in == nil || in.id != st.Inner {
		in = &innerSession{id: st.Inner}
	}
	return pendingAsk{upstream: st.Upstream, id: st.ID, clientTask: st.ClientTask}, in, true
}

// maxSealedInit bounds the initialize params a sealed id carries: the id
// travels in a header of every request.
const maxSealedInit = 4 << 10

// sealableInit is init, or as much of it as other replicas need (the
// client's capabilities and name) when it is larger than maxSealedInit.
func sealableInit(init jsontext.Value) jsontext.Value {
	if len(init) <= maxSealedInit {
		return init
	}
	var p map[string]jsontext.Value
	if json.Unmarshal(init, &p) != nil {
		return nil
	}
	for _, keep := range [][]string{{"protocolVersion", "capabilities", "clientInfo"}, {"protocolVersion", "clientInfo"}, {"protocolVersion"}} {
		small := map[string]jsontext.Value{}
		for _, k := range keep {
			if v, ok := p[k]; ok {
				small[k] = v
			}
		}
		if b, err := json.Marshal(small); err == nil && len(b) <= maxSealedInit {
			return b
		}
	}
	return nil
}

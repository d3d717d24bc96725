package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// session is one downstream MCP session. The gateway mints its id; the
// upstream's own session id never leaves the gateway, so an id is only
// meaningful on the route that issued it.
type session struct {
	id    string
	refs  sync.Once
	refv  string // telemetry.SessionRef(id), made once (ref)
	route string // upstream name the session belongs to

	upstreamID string       // upstream's Mcp-Session-Id (HTTP relay)
	bridge     *bridgeState // upstream Conn (bridged routes)
	// elicitForm: the client declared form-mode elicitation at initialize,
	// so a held call can be put to its user (see approve.go).
	elicitForm bool
	// caps are the capabilities its client declared at initialize (nil:
	// none, or a session restored from its sealed id on another replica):
	// tools/list answers are recorded with them.
	caps jsontext.Value
	// lease is the session's place in the gateway's session limits,
	// given back when it leaves the table (limits.go).
	lease *lease
	// owner is who the session belongs to (identity.go): a request that
	// claims another principal finds no session.
	owner principal
	// replays remembers the requests whose answer stream broke off, for
	// a resumed stream to be screened (replay.go).
	replays replays
	// tasks holds what its upstream said about tasks not yet known while
	// its task-augmented requests await answers (taskhold.go); nil until
	// one is sent.
	tasks atomic.Pointer[taskHold]
	// askedUp holds the requests its upstream sent its client, until
	// answered: what a closed upstream may be answered (ids.go).
	askedUp askedIDs
	// held are the calls waiting for its user's approval (approve.go),
	// which its client may cancel (heldcalls.go).
	held heldCalls
	// serving counts the client's requests being served (sessionTable.use
	// to done): a session with one in flight is not idle. lastUsed is
	// when it was last used, or the last of them ended (unix
	// nanoseconds by its table's clock).
	serving  atomic.Int64
	lastUsed atomic.Int64

	mu      sync.Mutex // guards the fields below
	version string
	answers map[string]chan *intercept.Message // id of an approval elicitation -> its waiter
	asked   uint64                             // requests the gateway sent this client itself
	// events are the ids of the last events passed on to the client on
	// the session's streams, oldest first from nextEvent: a closed
	// upstream is sent only a Last-Event-ID among them (headers.go).
	events    *[maxEventIDs]string // made at the first event with an id: most sessions never have one
	nextEvent int
}

// ref is telemetry.SessionRef(s.id), how the session is recorded, hashed
// once rather than at each of its calls.
func (s *session) ref() string {
	s.refs.Do(func() { s.refv = telemetry.SessionRef(s.id) })
	return s.refv
}

// taskHold returns the session's taskHold, made on first use.
func (s *session) taskHold(g *Gateway) *taskHold {
	if h := s.tasks.Load(); h != nil {
		return h
	}
	s.tasks.CompareAndSwap(nil, newTaskHold(g.ic, g.withheld))
	return s.tasks.Load()
}

func (s *session) info() (agent, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner.agent, s.version
}

func (s *session) setVersion(v string) {
	if v == "" {
		return
	}
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

// expectAnswer mints the JSON id of a request the gateway itself sends to
// this session's client (prefix, a counter, closing quote) and registers
// a waiter for the client's response to it.
func (s *session) expectAnswer(prefix string) (id string, answer <-chan *intercept.Message) {
	ch := make(chan *intercept.Message, 1)
	s.mu.Lock()
	if s.answers == nil {
		s.answers = make(map[string]chan *intercept.Message)
	}
	s.asked++
	id = approvalID(prefix, s.asked)
	s.answers[id] = ch
	s.mu.Unlock()
	return id, ch
}

// dropAnswer forgets the waiter for id.
func (s *session) dropAnswer(id string) {
	s.mu.Lock()
	delete(s.answers, id)
	s.mu.Unlock()
}

// deliverAnswer hands a client's response to the waiter for its id, if
// one is still waiting; it reports whether one was.
func (s *session) deliverAnswer(m *intercept.Message) bool {
	s.mu.Lock()
	ch := s.answers[m.IDKey()]
	delete(s.answers, m.IDKey())
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m // buffered, and only ever sent once: the waiter was removed above
	return true
}

var errTooManySessions = errors.New("too many sessions")

// sessionTable maps gateway session ids to sessions. It is bounded and ends
// sessions idle for longer than the timeout.
type sessionTable struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu sync.Mutex // guards m
	m  map[string]*session
}

func newSessionTable(max int, idle time.Duration, now func() time.Time) *sessionTable {
	if now == nil {
		now = time.Now
	}
	return &sessionTable{max: max, idle: idle, now: now, m: make(map[string]*session)}
}

func newSessionID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (t *sessionTable) add(s *session) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= t.max {
		return errTooManySessions
	}
	s.lastUsed.Store(t.now().UnixNano())
	t.m[s.id] = s
	return nil
}

// get returns the session id on route, or nil. A session is never found
// through another route than the one that created it.
func (t *sessionTable) get(id, route string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[id]
	if s == nil || s.route != route {
		return nil
	}
	// Under t.mu: reap, which holds it, either sees the session used
	// now or has removed it, and it is not found.
	s.lastUsed.Store(t.now().UnixNano())
	return s
}

// use counts a request of s being served from now until done: s, found
// (get) the moment before, is not idle meanwhile.
func (t *sessionTable) use(s *session) { s.serving.Add(1) }

// done ends what use began: the session's idle time counts from now.
func (t *sessionTable) done(s *session) {
	s.lastUsed.Store(t.now().UnixNano())
	s.serving.Add(-1) // after: reap, seeing none, sees this use too
}

// find returns session id on whichever route, or nil, without counting
// as a use: for reporting an id presented on the wrong route.
func (t *sessionTable) find(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *sessionTable) remove(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[id]
	delete(t.m, id)
	if s != nil {
		s.lease.release()
	}
	return s
}

func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// reap ends idle sessions until ctx is done.
func (t *sessionTable) reap(ctx context.Context, end func(*session)) {
	everyTick(ctx, min(t.idle/2, time.Minute), func() {
		var idle []*session
		cutoff := t.now().Add(-t.idle).UnixNano()
		t.mu.Lock()
		for id, s := range t.m {
			// Not idle while a call of its is in flight, or waits for
			// approval: its client waits on the call's POST, and the
			// call's answer (the call, once approved) is recorded in,
			// or decided against, the session's memory. serving
			// first: done sets lastUsed before it counts down.
			if s.serving.Load() == 0 && s.lastUsed.Load() < cutoff && !s.held.any() {
				delete(t.m, id)
				s.lease.release()
				idle = append(idle, s)
			}
		}
		t.mu.Unlock()
		for _, s := range idle {
			end(s)
		}
	})
}

// everyTick calls f every d, at least a millisecond, until ctx ends
// (half a session_idle_timeout of 1ns is zero, which NewTicker panics
// on: TestTinySessionIdleTimeout).
func everyTick(ctx context.Context, d time.Duration, f func()) {
	tick := time.NewTicker(max(d, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// drain removes every session and returns them.
func (t *sessionTable) drain() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.m))
	for id, s := range t.m {
		out = append(out, s)
		delete(t.m, id)
		s.lease.release()
	}
	return out
}

package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Scope says whose memory a route rule consults.
type Scope string

const (
	// ScopeSession is the memory of one session of one agent.
	ScopeSession Scope = "session"
	// ScopeAgent is the memory of an agent across all its sessions.
	ScopeAgent Scope = "agent"
)

// Key names one memory in a Store. Session memory is keyed by agent and
// session together, so a session id replayed by another agent (or
// guessed) finds nothing (agentgateway GHSA-mvgg-jvj2-4frq). Upstreams are
// not part of any key: a source read through one upstream is remembered
// when a sink is called through another. Empty ids are ids like any other,
// which errs on the side of remembering: calls without a session id share
// one session memory per agent, and calls without an agent share one agent
// memory.
type Key struct {
	Scope   Scope
	Agent   string
	Session string // empty for ScopeAgent
	// Digest says that Agent and Session are the SHA-256s (hex) of the
	// names, one of which was too long to be a key (MemoryKey).
	Digest bool
}

// Longest names a Key holds as they are (MemoryKey). No real agent's name
// comes near MaxKeyAgent, nor a session id near MaxKeySession (a sealed
// id another replica opens is at most 4 KiB).
const (
	MaxKeyAgent   = 1 << 10
	MaxKeySession = 8 << 10
)

// MemoryKey is the key of the memory of agent (its name in NFC, as its
// manifest reads it) in session under scope. An agent's name is the
// client's to choose without auth, as long as a request (max_body_bytes),
// and a memory is kept for the store's TTL: if the agent's name is
// longer than MaxKeyAgent, or the session id longer than MaxKeySession,
// both are named by their SHA-256 (Digest), so that a memory's key is
// bounded whatever names a client gives and two names are still two
// memories. Before, each source call of a client naming itself afresh
// with 4 MiB wrote 8 MiB of keys into Redis for 30 days
// (TestAttackLongNamesBoundRedisKeys).
func MemoryKey(scope Scope, agent, session string) Key {
	k := Key{Scope: scope, Agent: nfc(agent)}
	if scope == ScopeSession {
		k.Session = session
	}
	if len(k.Agent) > MaxKeyAgent || len(k.Session) > MaxKeySession {
		k.Agent, k.Digest = nameDigest(k.Agent), true
		if scope == ScopeSession {
			k.Session = nameDigest(k.Session)
		}
	}
	return k
}

func nameDigest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// String renders k for stores that need a flat key, e.g.
// "session:5:alice/s-123" and "agent:alice"; a Digest key starts
// "agent#:" or "session#:". The agent's length prefix keeps agent and
// session ids apart whatever characters they hold.
func (k Key) String() string {
	mark := ""
	if k.Digest {
		mark = "#"
	}
	if k.Scope == ScopeAgent {
		return "agent" + mark + ":" + k.Agent
	}
	return "session" + mark + ":" + strconv.Itoa(len(k.Agent)) + ":" + k.Agent + "/" + k.Session
}

// Store is route memory: which labels (tool classes and tool names) were
// forwarded under a key, and when. Implementations must be safe for
// concurrent use; an error makes the pending decision a deny.
type Store interface {
	// Remember records that labels were forwarded under k at time at.
	Remember(ctx context.Context, k Key, labels []string, at time.Time) error
	// Seen reports whether any of labels was remembered under k at or
	// after since.
	Seen(ctx context.Context, k Key, labels []string, since time.Time) (bool, error)
}

// ErrEvicted is the error of Store.Seen when the memory asked about may
// have lost labels, written at or after since, to stay within the store's
// bounds: whether a source was forwarded cannot be told. The policy denies
// such a call with route_memory_evicted rather than treat the agent or
// session as clean.
var ErrEvicted = errors.New("route memory was evicted to stay within its bounds")

// A Retainer is a Store that forgets a memory a fixed time after its last
// write, such as Redis with a TTL. Compile rejects a route rule whose
// window is longer than Retention: a source older than that but inside
// the window would be forgotten, and its sink allowed. Rules without a
// window then see back as far as Retention.
type Retainer interface {
	Retention() time.Duration
}

var _ Store = (*MemoryStore)(nil)

// A SessionForgetter is a Store that can drop the session-scoped memories
// of a session that has ended. Session ids are never reused, so nothing
// can ask about them again; dropping them keeps live sessions from being
// evicted (and so treated as tainted) by the memories of ended ones.
type SessionForgetter interface {
	ForgetSession(id string)
}

var _ SessionForgetter = (*MemoryStore)(nil)

// MemoryOptions bounds a MemoryStore. The zero value means the defaults.
type MemoryOptions struct {
	// MaxKeys is how many memories (sessions plus agents) are kept; the
	// least recently written is evicted first. Zero means 100,000.
	MaxKeys int
	// MaxLabelsPerKey is how many distinct labels one memory keeps. Labels
	// are never evicted one by one: a memory that would pass the bound is
	// dropped whole and treated as evicted. The policy remembers only the
	// labels its route rules' after sides name, so only a policy naming
	// more than this many reaches it. Zero means 1,024.
	MaxLabelsPerKey int
	// MaxEvicted is how many evicted memories are remembered as evicted
	// (a hash of the key and the time of its last write, tens of bytes
	// each). Past it the oldest record is dropped and every memory the
	// store does not hold is treated as evicted up to that record's time.
	// Zero means four times MaxKeys.
	MaxEvicted int
}

// MemoryStore is a bounded in-memory Store. It never forgets a label on
// its own: to stay within its bounds it drops whole memories, least
// recently written first, and Seen then answers ErrEvicted for them
// whenever since reaches back to their last write. Evictions should be
// watched: each one can deny calls. It is safe for concurrent use.
type MemoryStore struct {
	maxLabels int
	seed      maphash.Seed
	evictions atomic.Uint64

	mu  sync.Mutex // guards the fields below and the memories in lru
	lru *simplelru.LRU[Key, *memory]
	// evicted maps the hash of an evicted memory's key to the latest
	// write it may have lost.
	evicted *simplelru.LRU[uint64, time.Time]
	// horizon is the latest write lost with a record dropped from
	// evicted: any memory not held may have lost writes up to it.
	horizon time.Time
	// sessions indexes the session-scoped memories held by session id,
	// for ForgetSession.
	sessions map[string]map[Key]struct{}
	// forgetting is set while ForgetSession removes memories: those are
	// dropped, not evicted.
	forgetting bool
}

// memory is what a MemoryStore holds for one Key.
type memory struct {
	labels map[string]time.Time
	last   time.Time // the latest write
	// forgot is the latest write an earlier incarnation of this memory
	// lost (zero: none). Labels not found in labels may have been written
	// up to then.
	forgot time.Time
}

// lost is the latest write that dropping m loses.
func (m *memory) lost() time.Time {
	if m.forgot.After(m.last) {
		return m.forgot
	}
	return m.last
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(opts MemoryOptions) *MemoryStore {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 100_000
	}
	if opts.MaxLabelsPerKey <= 0 {
		opts.MaxLabelsPerKey = 1024
	}
	if opts.MaxEvicted <= 0 {
		opts.MaxEvicted = 4 * opts.MaxKeys
	}
	s := &MemoryStore{maxLabels: opts.MaxLabelsPerKey, seed: maphash.MakeSeed()}
	// NewLRU only fails on size <= 0. Both callbacks run under s.mu.
	s.evicted, _ = simplelru.NewLRU(opts.MaxEvicted, func(_ uint64, t time.Time) {
		if t.After(s.horizon) {
			s.horizon = t
		}
	})
	s.sessions = make(map[string]map[Key]struct{})
	s.lru, _ = simplelru.NewLRU(opts.MaxKeys, func(k Key, m *memory) {
		s.unindex(k)
		if s.forgetting {
			return
		}
		s.evictions.Add(1)
		s.markEvicted(k, m.lost())
	})
	return s
}

func (s *MemoryStore) index(k Key) {
	if k.Scope != ScopeSession || k.Session == "" {
		return
	}
	ks := s.sessions[k.Session]
	if ks == nil {
		ks = make(map[Key]struct{}, 1)
		s.sessions[k.Session] = ks
	}
	ks[k] = struct{}{}
}

func (s *MemoryStore) unindex(k Key) {
	if ks := s.sessions[k.Session]; ks != nil {
		delete(ks, k)
		if len(ks) == 0 {
			delete(s.sessions, k.Session)
		}
	}
}

// ForgetSession implements SessionForgetter: the memories of session id
// (under any agent) are dropped, without counting as evictions.
func (s *MemoryStore) ForgetSession(id string) {
	if id == "" {
		return // requests outside any session share one memory per agent
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetting = true
	defer func() { s.forgetting = false }()
	for k := range s.sessions[id] {
		s.lru.Remove(k)
	}
	// Those of a long agent's, or of a long id, are under its digest
	// (MemoryKey).
	for k := range s.sessions[nameDigest(id)] {
		if k.Digest {
			s.lru.Remove(k)
		}
	}
}

func (s *MemoryStore) hash(k Key) uint64 { return maphash.Comparable(s.seed, k) }

// markEvicted records that k's memory lost writes up to t.
func (s *MemoryStore) markEvicted(k Key, t time.Time) {
	h := s.hash(k)
	if prev, ok := s.evicted.Peek(h); ok && prev.After(t) {
		t = prev
	}
	s.evicted.Add(h, t)
}

// forgotten is the latest write k's memory may have lost when the store
// does not hold it; zero when none.
func (s *MemoryStore) forgotten(k Key) time.Time {
	if t, ok := s.evicted.Peek(s.hash(k)); ok {
		return t
	}
	return s.horizon
}

// Remember implements Store.
func (s *MemoryStore) Remember(_ context.Context, k Key, labels []string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.lru.Get(k)
	if !ok {
		m = &memory{labels: make(map[string]time.Time, len(labels)), forgot: s.forgotten(k)}
		s.lru.Add(k, m)
		s.index(k)
	}
	for _, l := range labels {
		if t, ok := m.labels[l]; ok {
			if at.After(t) {
				m.labels[l] = at
			}
			continue
		}
		if len(m.labels) >= s.maxLabels {
			// Drop the memory whole rather than a label the route
			// rules may need.
			m.forgot, m.labels = m.lost(), make(map[string]time.Time)
			s.evictions.Add(1)
		}
		m.labels[l] = at
	}
	if at.After(m.last) {
		m.last = at
	}
	return nil
}

// Seen implements Store. It does not make a memory more recent: only
// writes keep it from eviction. It returns ErrEvicted when none of labels
// is found and the memory may have lost a write at or after since.
func (s *MemoryStore) Seen(_ context.Context, k Key, labels []string, since time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var forgot time.Time
	if m, ok := s.lru.Peek(k); ok {
		for _, l := range labels {
			if t, ok := m.labels[l]; ok && !t.Before(since) {
				return true, nil
			}
		}
		forgot = m.forgot
	} else {
		forgot = s.forgotten(k)
	}
	if len(labels) > 0 && !forgot.IsZero() && !since.After(forgot) {
		return false, ErrEvicted
	}
	return false, nil
}

// Evictions is the number of memories dropped to stay within bounds since
// the store was made.
func (s *MemoryStore) Evictions() uint64 { return s.evictions.Load() }

// Len is the number of memories held.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

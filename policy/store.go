package policy

import (
	"context"
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
}

// String renders k for stores that need a flat key, e.g.
// "session:5:alice/s-123" and "agent:alice". The agent's length prefix
// keeps agent and session ids apart whatever characters they hold.
func (k Key) String() string {
	if k.Scope == ScopeAgent {
		return "agent:" + k.Agent
	}
	return "session:" + strconv.Itoa(len(k.Agent)) + ":" + k.Agent + "/" + k.Session
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

var _ Store = (*MemoryStore)(nil)

// MemoryOptions bounds a MemoryStore. The zero value means the defaults.
type MemoryOptions struct {
	// MaxKeys is how many memories (sessions plus agents) are kept; the
	// least recently written is evicted first. Zero means 100,000.
	MaxKeys int
	// MaxLabelsPerKey is how many distinct labels one memory keeps; the
	// oldest is evicted first. Zero means 1,024.
	MaxLabelsPerKey int
}

// MemoryStore is a bounded in-memory Store. Evicting a memory forgets the
// sources it held, so Evictions should be watched: a growing count means
// route rules may be missing history. It is safe for concurrent use.
type MemoryStore struct {
	maxLabels int
	evictions atomic.Uint64

	mu  sync.Mutex // guards lru and the memories in it
	lru *simplelru.LRU[Key, map[string]time.Time]
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(opts MemoryOptions) *MemoryStore {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 100_000
	}
	if opts.MaxLabelsPerKey <= 0 {
		opts.MaxLabelsPerKey = 1024
	}
	s := &MemoryStore{maxLabels: opts.MaxLabelsPerKey}
	s.lru, _ = simplelru.NewLRU(opts.MaxKeys, func(Key, map[string]time.Time) { s.evictions.Add(1) }) // only fails on size <= 0
	return s
}

// Remember implements Store.
func (s *MemoryStore) Remember(_ context.Context, k Key, labels []string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.lru.Get(k)
	if !ok {
		m = make(map[string]time.Time, len(labels))
		s.lru.Add(k, m)
	}
	for _, l := range labels {
		if t, ok := m[l]; ok {
			if at.After(t) {
				m[l] = at
			}
			continue
		}
		if len(m) >= s.maxLabels {
			s.evictOldestLabel(m)
		}
		m[l] = at
	}
	return nil
}

func (s *MemoryStore) evictOldestLabel(m map[string]time.Time) {
	var oldest string
	var ot time.Time
	first := true
	for l, t := range m {
		if first || t.Before(ot) {
			oldest, ot, first = l, t, false
		}
	}
	delete(m, oldest)
	s.evictions.Add(1)
}

// Seen implements Store. It does not make a memory more recent: only
// writes keep it from eviction.
func (s *MemoryStore) Seen(_ context.Context, k Key, labels []string, since time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.lru.Peek(k)
	if !ok {
		return false, nil
	}
	for _, l := range labels {
		if t, ok := m[l]; ok && !t.Before(since) {
			return true, nil
		}
	}
	return false, nil
}

// Evictions is the number of memories and labels evicted to stay within
// bounds since the store was made.
func (s *MemoryStore) Evictions() uint64 { return s.evictions.Load() }

// Len is the number of memories held.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

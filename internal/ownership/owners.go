// Package ownership keeps who owns what, such as which principal started a
// task, in a bounded table of hashes.
package ownership

import (
	"hash/maphash"
	"sync"
)

// Table holds up to n owners (of tasks), forgetting the oldest first. It
// keeps hashes, not strings: a table of 100,000 tasks holds no pointer for
// the garbage collector to follow on every cycle (as a map of strings and
// an LRU list did, which cost more CPU per call than the rest of the
// ownership check). Hashes are keyed with a seed chosen per process, so
// nobody can make two keys, or two owners, collide on purpose; by chance,
// two of 100,000 keys collide with probability ~3e-10.
type Table struct {
	mu    sync.Mutex
	seed  maphash.Seed
	m     map[uint64]uint64 // hash of key -> hash of owner
	order []uint64          // keys in the order added: a ring of len n
	next  int               // where the next key goes in order, once full
	max   int               // n
}

// New returns a table of at most n (> 0) keys.
func New(n int) *Table {
	return &Table{seed: maphash.MakeSeed(), m: make(map[uint64]uint64), order: make([]uint64, 0, min(n, 1024)), max: n}
}

// ContainsOrAdd records owner for key unless key has one.
func (t *Table) ContainsOrAdd(key, owner string) {
	k, v := maphash.String(t.seed, key), maphash.String(t.seed, owner)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[k]; ok {
		return
	}
	if len(t.order) < t.max {
		t.order = append(t.order, k)
	} else {
		delete(t.m, t.order[t.next])
		t.order[t.next] = k
		t.next = (t.next + 1) % len(t.order)
	}
	t.m[k] = v
}

// Owns reports whether key is known, and whether owner is its owner.
func (t *Table) Owns(key, owner string) (known, owns bool) {
	k := maphash.String(t.seed, key)
	t.mu.Lock()
	v, ok := t.m[k]
	t.mu.Unlock()
	return ok, ok && v == maphash.String(t.seed, owner)
}

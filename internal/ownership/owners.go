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
	m     map[uint64]entry // hash of key -> its owner and place in order
	order []uint64         // keys in the order added: a ring of len n
	next  int              // where the next key goes in order, once full
	max   int              // n
	// share, if less than max, is the most keys one owner holds: an
	// owner adding one past it forgets its own oldest, whose place in
	// order the new key takes, never another owner's. byOwner holds each
	// owner's keys (only with a share).
	share   int
	byOwner map[uint64]*ownerKeys
}

type entry struct {
	owner uint64 // hash of the owner
	share uint64 // hash of whose share the key counts against (the owner's unless ContainsOrAddIn said otherwise)
	slot  int    // index in order
}

// ownerKeys is one owner's keys in the order added, oldest from head on.
// A key forgotten as the ring's oldest stays in keys until passed over:
// live counts the known ones.
type ownerKeys struct {
	keys []uint64
	head int
	live int
}

// New returns a table of at most n (> 0) keys.
func New(n int) *Table { return NewShared(n, n) }

// NewShared returns a table of at most n (> 0) keys of which one owner
// holds at most share (> 0): an owner adding keys past it forgets its own
// oldest. So one owner making keys without end (an agent starting tasks)
// pushes out only its own, never the others'; only many owners together
// fill the table, and then its oldest key goes, whoever's it is. The
// unnamed owner ("", no principal: every caller alike) has no share.
func NewShared(n, share int) *Table {
	t := &Table{seed: maphash.MakeSeed(), m: make(map[uint64]entry), order: make([]uint64, 0, min(n, 1024)), max: n, share: min(share, n)}
	if t.share < n {
		t.byOwner = make(map[uint64]*ownerKeys)
	}
	return t
}

// ContainsOrAdd records owner for key unless key has one.
func (t *Table) ContainsOrAdd(key, owner string) {
	t.ContainsOrAddHash(maphash.String(t.seed, key), owner)
}

// ContainsOrAddIn is ContainsOrAdd with the key counted against share's
// share of the table rather than owner's: owners that one party can
// make up at will (the names an unauthenticated client gives itself)
// share the share of what it cannot (its address). An empty share is
// the unnamed one, which has no bound.
func (t *Table) ContainsOrAddIn(key, owner, share string) {
	t.containsOrAdd(maphash.String(t.seed, key), owner, share)
}

// Hasher returns a hash seeded as the table's keys are, for a key made of
// several parts (ContainsOrAddHash, ContainsHash) without building it
// as one string.
func (t *Table) Hasher() maphash.Hash {
	var h maphash.Hash
	h.SetSeed(t.seed)
	return h
}

// ContainsHash reports whether the key of hash k (Hasher) is known.
func (t *Table) ContainsHash(k uint64) bool {
	t.mu.Lock()
	_, ok := t.m[k]
	t.mu.Unlock()
	return ok
}

// ContainsOrAddHash is ContainsOrAdd for the key of hash k (Hasher).
func (t *Table) ContainsOrAddHash(k uint64, owner string) {
	t.containsOrAdd(k, owner, owner)
}

func (t *Table) containsOrAdd(k uint64, owner, share string) {
	v, sv := maphash.String(t.seed, owner), maphash.String(t.seed, share)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[k]; ok {
		return
	}
	shared := t.byOwner != nil && share != ""
	if o := t.byOwner[sv]; shared && o != nil && o.live >= t.share {
		if slot, ok := t.popOldest(o, sv); ok {
			t.order[slot] = k
			t.m[k] = entry{v, sv, slot}
			t.push(o, k)
			return
		}
	}
	slot := t.next
	if len(t.order) < t.max {
		slot = len(t.order)
		t.order = append(t.order, k)
	} else {
		t.forgetSlot(slot)
		t.order[slot] = k
		t.next = (t.next + 1) % len(t.order)
	}
	t.m[k] = entry{v, sv, slot}
	if shared {
		o := t.byOwner[sv]
		if o == nil {
			o = &ownerKeys{}
			t.byOwner[sv] = o
		}
		t.push(o, k)
	}
}

// popOldest forgets share v's oldest known key and returns its place in
// order.
func (t *Table) popOldest(o *ownerKeys, v uint64) (int, bool) {
	for o.head < len(o.keys) {
		k := o.keys[o.head]
		o.head++
		if e, ok := t.m[k]; ok && e.share == v {
			delete(t.m, k)
			o.live--
			return e.slot, true
		}
	}
	return 0, false
}

// push adds k to o, compacting o when most of what it holds is no
// longer known.
func (t *Table) push(o *ownerKeys, k uint64) {
	o.keys = append(o.keys, k)
	o.live++
	if n := len(o.keys) - o.head; n > 64 && n > 2*o.live {
		kept := o.keys[:0]
		for _, k := range o.keys[o.head:] {
			if _, ok := t.m[k]; ok {
				kept = append(kept, k)
			}
		}
		o.keys, o.head = kept, 0
	}
}

// forgetSlot forgets the key in order[slot], the ring's oldest.
func (t *Table) forgetSlot(slot int) {
	k := t.order[slot]
	e, ok := t.m[k]
	if !ok || e.slot != slot {
		return
	}
	delete(t.m, k)
	if t.byOwner == nil {
		return
	}
	if o := t.byOwner[e.share]; o != nil {
		if o.live--; o.live <= 0 {
			delete(t.byOwner, e.share)
		}
	}
}

// Owns reports whether key is known, and whether owner is its owner.
func (t *Table) Owns(key, owner string) (known, owns bool) {
	k := maphash.String(t.seed, key)
	t.mu.Lock()
	e, ok := t.m[k]
	t.mu.Unlock()
	return ok, ok && e.owner == maphash.String(t.seed, owner)
}

package ownership

import "sync"

// Unclaimed holds the owners of keys a shared store did not take (it did
// not answer), to claim there once it answers: apart from a Table, since
// the store may say another owner was first. It holds at most max keys;
// past that an arbitrary one is forgotten. The zero value holds none;
// use NewUnclaimed. Its methods may be called concurrently.
type Unclaimed struct {
	max int
	mu  sync.Mutex // guards m
	m   map[string]unclaimedOwner
}

type unclaimedOwner struct{ owner, share string }

// NewUnclaimed returns an Unclaimed of at most n (> 0) keys.
func NewUnclaimed(n int) *Unclaimed {
	return &Unclaimed{max: n, m: map[string]unclaimedOwner{}}
}

// Keep records owner (counted against share) for key unless it holds
// one.
func (u *Unclaimed) Keep(key, owner, share string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.m[key]; ok || u.max <= 0 {
		return
	}
	if len(u.m) >= u.max {
		for k := range u.m {
			delete(u.m, k)
			break
		}
	}
	u.m[key] = unclaimedOwner{owner, share}
}

// Take returns, and forgets, key's owner and share, and whether it held
// them.
func (u *Unclaimed) Take(key string) (owner, share string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	o, ok := u.m[key]
	delete(u.m, key)
	return o.owner, o.share, ok
}

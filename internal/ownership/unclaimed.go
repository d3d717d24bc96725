package ownership

import "sync"

// Unclaimed holds the owners of keys a shared store did not take (it did
// not answer), to claim there once it answers: apart from a Table, since
// the store may say another owner was first. It holds at most max keys,
// of which one share holds at most share: a share keeping one past that
// forgets its own oldest, never another's, so one caller making keys
// without end while the store does not answer cannot push out the keys
// of others, which would be no one's once it answers. Past max (many
// shares together) an arbitrary key is forgotten. The unnamed share ("")
// has no bound of its own, as in a Table: the owner all unauthenticated
// callers share is no share, so callers name theirs by address (a2a's
// callerShare, intercept's shareOf). The zero value holds none; use
// NewUnclaimed. Its methods may be called concurrently.
type Unclaimed struct {
	max   int
	share int
	mu    sync.Mutex // guards the fields below
	m     map[string]unclaimedOwner
	// byShare holds each named share's keys in the order kept; a key
	// forgotten since stays until passed over: live counts those held.
	byShare map[string]*unclaimedKeys
}

type unclaimedOwner struct{ owner, share string }

type unclaimedKeys struct {
	keys []string
	live int
}

// NewUnclaimed returns an Unclaimed of at most n (> 0) keys, of which one
// share holds at most share (> 0).
func NewUnclaimed(n, share int) *Unclaimed {
	return &Unclaimed{max: n, share: min(share, n), m: map[string]unclaimedOwner{}, byShare: map[string]*unclaimedKeys{}}
}

// Keep records owner (counted against share) for key unless it holds
// one.
func (u *Unclaimed) Keep(key, owner, share string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.m[key]; ok || u.max <= 0 {
		return
	}
	if s := u.byShare[share]; share != "" && s != nil && s.live >= u.share {
		u.forgetOldest(share, s)
	} else if len(u.m) >= u.max {
		for k, o := range u.m {
			u.forget(k, o)
			break
		}
	}
	u.m[key] = unclaimedOwner{owner, share}
	if share == "" {
		return
	}
	s := u.byShare[share]
	if s == nil {
		s = &unclaimedKeys{}
		u.byShare[share] = s
	}
	s.keys = append(s.keys, key)
	s.live++
	if len(s.keys) > 64 && len(s.keys) > 2*s.live {
		kept := s.keys[:0]
		for _, k := range s.keys {
			if o, ok := u.m[k]; ok && o.share == share {
				kept = append(kept, k)
			}
		}
		clear(s.keys[len(kept):])
		s.keys = kept
	}
}

// forgetOldest forgets the oldest key share holds; u.mu is held.
func (u *Unclaimed) forgetOldest(share string, s *unclaimedKeys) {
	for len(s.keys) > 0 {
		k := s.keys[0]
		s.keys[0] = ""
		s.keys = s.keys[1:]
		if o, ok := u.m[k]; ok && o.share == share {
			u.forget(k, o)
			return
		}
	}
}

// forget forgets key, held for o; u.mu is held.
func (u *Unclaimed) forget(key string, o unclaimedOwner) {
	delete(u.m, key)
	if s := u.byShare[o.share]; s != nil {
		if s.live--; s.live <= 0 {
			delete(u.byShare, o.share)
		}
	}
}

// Take returns, and forgets, key's owner and share, and whether it held
// them.
func (u *Unclaimed) Take(key string) (owner, share string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	o, ok := u.m[key]
	if ok {
		u.forget(key, o)
	}
	return o.owner, o.share, ok
}

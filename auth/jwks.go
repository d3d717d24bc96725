package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwksCache holds an issuer's signing keys. A kid it does not know makes
// it fetch the set again, at most once per minRefresh however many
// tokens ask; keys that vanish from a fetched set are dropped at once,
// and keys it cannot refetch (the JWKS is down or answers garbage) stay
// usable until ttl after they were last fetched, then fail closed. It is
// safe for concurrent use.
type jwksCache struct {
	url        string
	client     *http.Client
	ttl        time.Duration
	minRefresh time.Duration
	now        func() time.Time

	mu        sync.Mutex // guards the fields below
	keys      jwkSet
	fetched   time.Time     // last successful fetch: keys expire ttl after it
	attempted time.Time     // last fetch attempt, successful or not
	began     time.Time     // when the fetch the keys came from began
	inflight  chan struct{} // closed when the fetch under way ends; nil when none is
	lastErr   error
}

// jwksFetchTimeout bounds one fetch of the set.
const jwksFetchTimeout = 10 * time.Second

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

var errUnknownKID = errors.New("no signing key with this kid")

// lookup returns the keys named kid, fetching the set when kid is unknown
// or the keys have expired and the rate limit allows. An empty kid
// returns every key, in the set's order.
func (c *jwksCache) lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	for tries := 0; ; tries++ {
		c.mu.Lock()
		now := c.now()
		fresh := !c.fetched.IsZero() && now.Sub(c.fetched) < c.ttl
		if fresh {
			if ks := c.match(kid); len(ks) > 0 {
				c.mu.Unlock()
				return ks, nil
			}
		}
		if tries > 0 || (!c.attempted.IsZero() && now.Sub(c.attempted) < c.minRefresh && c.inflight == nil) {
			err := c.lastErr
			c.mu.Unlock()
			if !fresh {
				if err == nil {
					err = errors.New("the signing keys expired and cannot be refetched yet")
				}
				return nil, fmt.Errorf("JWKS %s: %w", c.url, err)
			}
			return nil, errUnknownKID
		}
		wait := c.inflight
		if wait == nil {
			wait = make(chan struct{})
			c.inflight = wait
			c.attempted = now
			go c.fetch(wait)
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// refetch fetches the set again, or waits for the fetch under way,
// unless one was attempted within minRefresh; fetched reports whether the
// keys held come from a fetch that began at since or after, err why the
// last fetch failed.
func (c *jwksCache) refetch(ctx context.Context, since time.Time) (fetched bool, err error) {
	c.mu.Lock()
	if c.inflight == nil && !c.fetched.IsZero() && !c.began.Before(since) {
		c.mu.Unlock()
		return true, nil
	}
	if ended, err := c.awaitFetch(ctx); !ended {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.fetched.IsZero() && !c.began.Before(since), c.lastErr
}

// awaitFetch waits for the fetch under way, or starts one and waits for
// it, unless one was attempted within minRefresh; it reports whether a
// fetch ended (else ctx's error, or nil when held back). c.mu is held on
// entry and released.
func (c *jwksCache) awaitFetch(ctx context.Context) (bool, error) {
	wait := c.inflight
	if wait == nil && !c.attempted.IsZero() && c.now().Sub(c.attempted) < c.minRefresh {
		c.mu.Unlock()
		return false, nil
	}
	if wait == nil {
		wait = make(chan struct{})
		c.inflight = wait
		c.attempted = c.now()
		go c.fetch(wait)
	}
	c.mu.Unlock()
	select {
	case <-wait:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// replaced returns the keys held named kid (every one, in the set's
// order, for ""), if a fetch has replaced the set tried was looked up in
// (tried is what lookup returned for kid) since, fetching it again first
// unless one was attempted within minRefresh or is under way (then its
// end is waited for). Whether the keys are new is judged by the set, not
// by when a fetch began: a fetch that ended after tried was looked up, or
// began before, replaced it all the same.
func (c *jwksCache) replaced(ctx context.Context, kid string, tried []jose.JSONWebKey) ([]jose.JSONWebKey, bool) {
	c.mu.Lock()
	if ks, ok := c.newer(kid, tried); ok {
		c.mu.Unlock()
		return ks, true
	}
	if ended, _ := c.awaitFetch(ctx); !ended {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newer(kid, tried)
}

// newer returns the keys held named kid if they are fresh and from
// another set than tried: every fetch makes new slices. Callers hold mu.
func (c *jwksCache) newer(kid string, tried []jose.JSONWebKey) ([]jose.JSONWebKey, bool) {
	ks := c.match(kid)
	if len(ks) == 0 || c.now().Sub(c.fetched) >= c.ttl {
		return nil, false
	}
	if len(tried) > 0 && &ks[0] == &tried[0] {
		return nil, false
	}
	return ks, true
}

// hasKey reports whether the key named kid is key itself, in a set
// still fresh: the same material, not only the same name (an IdP may put
// new material under an old kid after a compromise).
func (c *jwksCache) hasKey(kid string, key any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Sub(c.fetched) >= c.ttl {
		return false
	}
	for _, k := range c.keys.byKID[kid] {
		if eq, ok := k.Key.(interface{ Equal(crypto.PublicKey) bool }); ok && eq.Equal(key) {
			return true
		}
	}
	return false
}

// hasKeyRef is hasKey of the key whose digest (keyDigest) is sum.
func (c *jwksCache) hasKeyRef(kid, sum string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Sub(c.fetched) >= c.ttl {
		return false
	}
	for _, k := range c.keys.byKID[kid] {
		if got, ok := keyDigest(k.Key); ok && got == sum {
			return true
		}
	}
	return false
}

// match returns the keys named kid (all of them for ""), in the set's
// order. Callers hold mu; the slice returned is never written to.
func (c *jwksCache) match(kid string) []jose.JSONWebKey {
	if kid == "" {
		return c.keys.all
	}
	return c.keys.byKID[kid]
}

// A jwkSet is a fetched JWKS's signing keys: every one, in the set's
// order, and by kid. Keys without a kid, or several under one, are all
// kept: a token without a kid may be signed by any of them.
type jwkSet struct {
	all   []jose.JSONWebKey
	byKID map[string][]jose.JSONWebKey
}

// fetch gets the set, replacing the keys on success, and closes done. It
// is not tied to any one request: a client that goes away does not
// cancel the fetch others wait for.
func (c *jwksCache) fetch(done chan struct{}) {
	keys, err := c.get()
	c.mu.Lock()
	if err == nil {
		c.keys, c.fetched, c.began = keys, c.now(), c.attempted
	}
	c.lastErr = err
	c.inflight = nil
	c.mu.Unlock()
	close(done)
}

func (c *jwksCache) get() (jwkSet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return jwkSet{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return jwkSet{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return jwkSet{}, fmt.Errorf("HTTP %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return jwkSet{}, err
	}
	if len(b) > maxJWKSBytes {
		return jwkSet{}, fmt.Errorf("the key set is larger than %d bytes", maxJWKSBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return jwkSet{}, fmt.Errorf("the key set is not a JWKS: %w", err)
	}
	keys := jwkSet{byKID: make(map[string][]jose.JSONWebKey, len(set.Keys))}
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue // a key type go-jose does not know: not ours to use
		}
		// Only public signing keys: a symmetric ("oct") key in a JWKS
		// would let anyone who reads the set sign tokens.
		if !k.IsPublic() || !k.Valid() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		keys.all = append(keys.all, k)
		keys.byKID[k.KeyID] = append(keys.byKID[k.KeyID], k)
	}
	if len(keys.all) == 0 {
		return jwkSet{}, errors.New("the key set holds no public signing keys")
	}
	return keys, nil
}

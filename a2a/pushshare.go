package a2a

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/aead"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
)

// Relays shared by replicas (Options.Relays). Without a store a relay
// lives in the process that took its registration. With one, each relay's
// record is also kept in the store, sealed with AES-256-GCM under
// Options.RelayKeys (sluice serve's session_keys) and bound to the
// relay's id, so that:
//
//   - any replica takes the agent's push to any relay: it reads the
//     record (one store round trip per push) and checks and delivers the
//     push as the registering replica would;
//   - a relay outlives the process that registered it;
//   - a relay ended on one replica (deleted config, the task's last
//     state, the caller's credential, a bound) is ended on all: the store
//     is the record of which relays live, and a replica's own copy serves
//     only while the store still holds the relay.
//
// The record holds no secret in clear: the caller's URL, token and
// authentication are sealed with the rest, and of the agent's token only
// its SHA-256 is kept, so that even the keys do not give it back.
//
// The caller's credential cannot travel: a replica that did not take the
// registration checks what the record says of it (relayCredential).

// RelayStore keeps relay records where every replica sees them (Redis in
// sluice serve). Values are opaque (sealed) bytes; a store that cannot
// answer returns an error, and the gateway refuses what needed it rather
// than deliver or register unchecked. Its methods are called concurrently.
type RelayStore interface {
	// Put stores value under key for ttl, replacing what was there.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Get returns key's value and whether it has one.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Delete removes key; a key that is not there is no error.
	Delete(ctx context.Context, key string) error
	// Renew stores value under key for ttl only if key holds a value now
	// (a nil value keeps the one there, its TTL from now), and reports
	// whether it did: a relay ended through another replica while this
	// one delivered a push or bound it is not brought back.
	Renew(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
}

// errRelayGone is a relay the store no longer holds when a replica
// stores it again: ended through another replica meanwhile.
var errRelayGone = errors.New("the push relay was ended meanwhile")

// errRelayStore is a relay store that did not answer.
var errRelayStore = errors.New("the shared relay store did not answer")

// relayCredential is what a record says of the credential of the caller
// that registered it, for a replica that does not hold its Principal.
type relayCredential struct {
	Method  string    `json:"m"`           // api_key, jwt, mtls…
	KeyID   string    `json:"k,omitempty"` // an API key's id, rechecked against the key file (Options.RecheckKey)
	Expires time.Time `json:"e,omitzero"`  // a JWT's exp, a certificate's NotAfter
	Lapses  bool      `json:"l,omitempty"` // the credential can stop holding (Principal.Check)
	// JWTKey names a JWT's signing key (Principal.SigningKey), asked of
	// the issuer's key set again (Options.RecheckJWTKey): a key the issuer
	// withdrew before the token's exp ends the relay on every replica,
	// not only on the one that holds the Principal.
	JWTKey string `json:"j,omitempty"`
}

// credentialOf is what a record keeps of p (nil: no credential to lose).
func credentialOf(p *intercept.Principal) *relayCredential {
	if p == nil || (p.Check == nil && p.Expires.IsZero()) {
		return nil
	}
	c := &relayCredential{Method: p.Method, Expires: p.Expires, Lapses: p.Check != nil, JWTKey: p.SigningKey}
	if id, ok := p.Claims["key_id"].(string); ok && p.Method == "api_key" {
		c.KeyID = id
	}
	return c
}

// storedRelay is a relay's record in the store, sealed.
type storedRelay struct {
	TokenHash []byte           `json:"th"`
	Agent     string           `json:"a"`
	Owner     string           `json:"o"`
	Share     string           `json:"s"`
	URL       string           `json:"u"`
	CallerTok string           `json:"t,omitempty"`
	Auth      jsontext.Value   `json:"au,omitempty"`
	Task      string           `json:"k,omitempty"`
	ConfigID  string           `json:"c,omitempty"`
	Cred      *relayCredential `json:"cr,omitempty"`
	Created   time.Time        `json:"at,omitzero"`
}

// sharedRelays is a relay store with the keys that seal its records.
type sharedRelays struct {
	store RelayStore
	aeads []cipher.AEAD // the first seals, all open
	ttl   time.Duration

	// Removals the store did not take (it did not answer) are retried
	// every retryEvery until they succeed or the records' TTL ends them:
	// a relay ended here must end on every replica once the store is
	// back, not push_relay.ttl later.
	mu         sync.Mutex
	unremoved  []unremoved
	retrying   bool        // a retry is scheduled
	timer      *time.Timer // the retry scheduled, while retrying
	closed     bool        // close was called: nothing more is scheduled
	retryEvery time.Duration
	log        func(msg string, args ...any)
	// removing is held by each round of removals (removeAgain): Close
	// waits for a retry under way, then tries what it left once more.
	removing sync.Mutex
}

// unremoved is a removal to retry: a relay's record, or (config) the
// relay a config's key names and the key.
type unremoved struct {
	key    string
	config bool
	failed time.Time // when the removal failed
	until  time.Time // the record's TTL ends it by then
}

// maxUnremoved bounds the removals kept for a retry; past it the oldest
// are left to the records' TTL (logged).
const maxUnremoved = 4096

// retryRemovalsEvery is how often removals the store did not take are
// retried.
const retryRemovalsEvery = 2 * time.Second

func newSharedRelays(store RelayStore, keys [][]byte, ttl time.Duration) (*sharedRelays, error) {
	if len(keys) == 0 {
		return nil, errors.New("push relay: a shared relay store needs keys to seal its records (session_keys)")
	}
	aeads, err := aead.FromKeys(keys, "push relay: key")
	if err != nil {
		return nil, err
	}
	return &sharedRelays{store: store, ttl: ttl, aeads: aeads, retryEvery: retryRemovalsEvery}, nil
}

// relayAD binds a sealed record to its relay's id: a record copied under
// another relay's key does not open.
func relayAD(id string) []byte { return []byte("sluice push relay v1\x00" + id) }

// configKey is the store's key of the relay of owner's config configID
// on task: a config deleted through any replica ends its relay, and one
// the agent replaces (the same id) ends the relay it replaces. Hashed: a
// key names no task or principal.
func configKey(agent, owner, task, configID string) string {
	h := sha256.Sum256([]byte(agent + "\x00" + owner + "\x00" + task + "\x00" + configID))
	return "c." + base64.RawURLEncoding.EncodeToString(h[:]) // a relay id holds no '.'
}

// save stores r's record, as it is now, and the key of its config
// (configKey) once it has a task and an id, ending a relay the config's
// key named before (the agent replaced that config). With again, r is a
// relay stored before (bound to its task, its config's id learned): it
// is stored only if the store still holds it (errRelayGone if not), or a
// delete through another replica meanwhile would be undone.
func (s *sharedRelays) save(ctx context.Context, p *pushRelays, r *pushRecord, again bool) error {
	p.mu.Lock()
	st := storedRelay{TokenHash: r.tokenHash[:], Agent: r.agent, Owner: r.owner, Share: r.share, URL: r.url,
		CallerTok: r.callerTok, Auth: r.auth, Task: r.task, ConfigID: r.configID, Cred: r.cred, Created: r.created}
	p.mu.Unlock()
	plain, err := json.Marshal(st)
	if err != nil {
		return err
	}
	a := s.aeads[0]
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	rand.Read(nonce) // never fails (crypto/rand)
	sealed := a.Seal(nonce, nonce, plain, relayAD(r.id))
	if again {
		ok, err := s.store.Renew(ctx, r.id, sealed, s.ttl)
		if err != nil {
			return fmt.Errorf("%w: %w", errRelayStore, err)
		}
		if !ok {
			return errRelayGone
		}
	} else if err := s.store.Put(ctx, r.id, sealed, s.ttl); err != nil {
		return fmt.Errorf("%w: %w", errRelayStore, err)
	}
	if st.Task == "" || st.ConfigID == "" {
		return nil
	}
	key := configKey(st.Agent, st.Owner, st.Task, st.ConfigID)
	old, ok, err := s.store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("%w: %w", errRelayStore, err)
	}
	if ok && string(old) != r.id {
		if err := s.store.Delete(ctx, string(old)); err != nil {
			return fmt.Errorf("%w: %w", errRelayStore, err)
		}
	}
	if err := s.store.Put(ctx, key, []byte(r.id), s.ttl); err != nil {
		return fmt.Errorf("%w: %w", errRelayStore, err)
	}
	return nil
}

// removeConfig ends the relay of owner's config configID on task,
// whichever replica registered it.
// A removal the store does not take is retried (retryLater).
func (s *sharedRelays) removeConfig(ctx context.Context, agent, owner, task, configID string) error {
	key := configKey(agent, owner, task, configID)
	if err := s.removeConfigKey(ctx, key, time.Time{}); err != nil {
		s.retryLater([]string{key}, true)
		return err
	}
	return nil
}

// removeConfigKey deletes the relay the config's key names, then the
// key. With before set (a retry), a relay registered after it is the
// config set again since (under the same id): it is kept, and the key
// that names it.
func (s *sharedRelays) removeConfigKey(ctx context.Context, key string, before time.Time) error {
	id, ok, err := s.store.Get(ctx, key)
	if err == nil && ok && !before.IsZero() {
		var r *pushRecord
		if r, err = s.load(ctx, string(id)); err == nil && r != nil && r.created.After(before) {
			return nil
		}
	}
	if err == nil && ok {
		err = s.store.Delete(ctx, string(id))
	}
	if err == nil {
		err = s.store.Delete(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errRelayStore, err)
	}
	return nil
}

// load returns the relay id names as the store has it, or nil if the
// store holds none (or one no key opens).
func (s *sharedRelays) load(ctx context.Context, id string) (*pushRecord, error) {
	b, ok, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRelayStore, err)
	}
	if !ok {
		return nil, nil
	}
	for _, a := range s.aeads {
		if len(b) < a.NonceSize() {
			break
		}
		plain, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], relayAD(id))
		if err != nil {
			continue
		}
		var st storedRelay
		if json.Unmarshal(plain, &st) != nil || len(st.TokenHash) != sha256.Size {
			return nil, nil
		}
		r := &pushRecord{id: id, agent: st.Agent, owner: st.Owner, share: st.Share, url: st.URL, callerTok: st.CallerTok,
			auth: st.Auth, cred: st.Cred, task: st.Task, configID: st.ConfigID, created: st.Created}
		copy(r.tokenHash[:], st.TokenHash)
		return r, nil
	}
	return nil, nil
}

// forget deletes the records of ids, on their own timeout: a relay ended
// here must end on every replica, whoever's request ended it. Once the
// store does not take one, the rest are not asked (each would wait out
// the timeout in turn): all are retried (retryLater).
func (s *sharedRelays) forget(ctx context.Context, ids []string) error {
	for i, id := range ids {
		if err := s.store.Delete(ctx, id); err != nil {
			s.retryLater(ids[i:], false)
			return fmt.Errorf("%w: %w", errRelayStore, err)
		}
	}
	return nil
}

// retryLater keeps keys (relay ids, or config keys) to remove again in
// retryEvery, until the store takes them or their records' TTL ends.
func (s *sharedRelays) retryLater(keys []string, config bool) {
	if len(keys) == 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.unremoved = append(s.unremoved, unremoved{key: k, config: config, failed: now, until: now.Add(s.ttl)})
	}
	if over := len(s.unremoved) - maxUnremoved; over > 0 {
		s.unremoved = slices.Delete(s.unremoved, 0, over)
		if s.log != nil {
			s.log("a2a: push relay: too many ended relays wait for the shared store; the oldest are left to push_relay.ttl", "dropped", over)
		}
	}
	switch {
	case s.closed:
		if s.log != nil {
			s.log("a2a: push relay: ended relays the shared store did not take, as the gateway shuts down, are left to push_relay.ttl: other replicas deliver to them until then",
				"relays", len(keys))
		}
	case !s.retrying:
		s.retrying = true
		s.timer = time.AfterFunc(s.retryEvery, s.retry)
	}
}

// retry removes again what the store did not take; what it still does
// not take waits for the next retry, while any is left.
func (s *sharedRelays) retry() {
	s.removeAgain()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unremoved) == 0 || s.closed {
		s.retrying, s.timer = false, nil
		return
	}
	s.timer = time.AfterFunc(s.retryEvery, s.retry)
}

// close ends the retries: removals waiting for the store are tried once
// more (after a retry under way, whose removals it would not see), and
// what it still does not take is left to the records' TTL, logged (other
// replicas deliver to those relays until then).
func (s *sharedRelays) close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil && s.timer.Stop() {
		s.retrying, s.timer = false, nil
	}
	s.mu.Unlock()
	if n := s.removeAgain(); n > 0 && s.log != nil {
		s.log("a2a: push relay: ended relays the shared store did not take are left to push_relay.ttl: other replicas deliver to them until then",
			"relays", n)
	}
}

// removeAgain tries once more the removals the store did not take, and
// returns how many it still does not take (kept for the next try).
func (s *sharedRelays) removeAgain() int {
	s.removing.Lock()
	defer s.removing.Unlock()
	s.mu.Lock()
	todo := s.unremoved
	s.unremoved = nil
	s.mu.Unlock()
	ctx := context.Background()
	now := time.Now()
	var left []unremoved
	for i, u := range todo {
		if now.After(u.until) {
			continue // the store's TTL ended the record
		}
		var err error
		if u.config {
			err = s.removeConfigKey(ctx, u.key, u.failed)
		} else if err = s.store.Delete(ctx, u.key); err != nil {
			err = fmt.Errorf("%w: %w", errRelayStore, err)
		}
		if err != nil {
			// Still not answering: the rest wait too, without a timeout each.
			left = append(left, todo[i:]...)
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unremoved = append(left, s.unremoved...)
	return len(s.unremoved)
}

// saveRelay stores the relay r registers (Options.Relays), ending a
// relay of the config it replaces; without a store it does nothing.
func (g *Gateway) saveRelay(ctx context.Context, r *pushRecord) error {
	return g.storeRelay(ctx, r, false)
}

// updateRelay stores r again, bound to its task or its config's id
// learned, if the store still holds it; one ended through another
// replica meanwhile (errRelayGone) is ended here too.
func (g *Gateway) updateRelay(ctx context.Context, r *pushRecord) error {
	return g.storeRelay(ctx, r, true)
}

// liveRelay reports whether r still lives, just before a push is
// delivered: ended meanwhile (its config deleted, its task's last state,
// a bound), here or through another replica, while the push's body came
// as slowly as the agent liked, it is not. With a store it renews r's
// record and its config's key, their TTL from now, only if the store
// still holds r (so a delivery does not bring back a relay ended
// meanwhile); one the store no longer holds is ended here too.
func (g *Gateway) liveRelay(ctx context.Context, r *pushRecord) (bool, error) {
	if g.shared == nil {
		return g.pushes.get(r.id) == r, nil
	}
	ctx = context.WithoutCancel(ctx)
	ok, err := g.shared.store.Renew(ctx, r.id, nil, g.shared.ttl)
	switch {
	case err != nil:
		return false, fmt.Errorf("%w: %w", errRelayStore, err)
	case !ok:
		g.pushes.drop(r)
		return false, nil
	}
	g.pushes.mu.Lock()
	task, configID := r.task, r.configID
	g.pushes.mu.Unlock()
	if task != "" && configID != "" {
		_, _ = g.shared.store.Renew(ctx, configKey(r.agent, r.owner, task, configID), nil, g.shared.ttl)
	}
	return true, nil
}

// removeSharedConfig ends, in the store, the relay of owner's config
// configID on task, registered through whichever replica.
func (g *Gateway) removeSharedConfig(ctx context.Context, agent, owner, task, configID string) {
	if g.shared == nil {
		return
	}
	if err := g.shared.removeConfig(context.WithoutCancel(ctx), agent, owner, task, configID); err != nil {
		g.log.Warn("a2a: push relay: a deleted config's relay could not be removed from the shared store: other replicas deliver its pushes until the removal, retried, succeeds", "agent", agent, "principal", principalOf(owner), "err", err)
	}
}

func (g *Gateway) storeRelay(ctx context.Context, r *pushRecord, again bool) error {
	if g.shared == nil || r == nil {
		return nil
	}
	err := g.shared.save(context.WithoutCancel(ctx), g.pushes, r, again)
	switch {
	case errors.Is(err, errRelayGone):
		g.pushes.drop(r)
	case err != nil:
		g.log.Warn("a2a: push relay: the relay's record could not be stored: other replicas will not deliver its pushes", "agent", r.agent, "principal", principalOf(r.owner), "err", err)
	}
	return err
}

// forgetEnded deletes from the store the relays this process ended since
// it last did (pushRelays.ended); without a store it does nothing.
func (g *Gateway) forgetEnded(ctx context.Context) {
	ids := g.pushes.takeEnded()
	if g.shared == nil || len(ids) == 0 {
		return
	}
	if err := g.shared.forget(context.WithoutCancel(ctx), ids); err != nil {
		// Retried (sharedRelays.retry); meanwhile a replica that takes a
		// push for it reads the credential and the task as before.
		g.log.Warn("a2a: push relay: an ended relay could not be removed from the shared store: other replicas hold it until the removal, retried, succeeds", "relays", len(ids), "err", err)
	}
}

// errRegisterShared refuses a registration whose relay the store did
// not take: other replicas could not deliver its pushes.
var errRegisterShared = &intercept.WireError{Code: intercept.CodeInternalError,
	Message: "push notifications: the gateway could not record the push config's relay in its shared store (agent_tasks.redis_url): not registered with the agent; try again"}

// storedLapsed says why the credential a record describes no longer
// holds, or nil: how a replica that did not take the registration checks
// the caller's credential. An expiry (a JWT's exp, a certificate's
// NotAfter) is checked here; an API key is looked up again in the key
// file every replica loads (Options.RecheckKey; an error wrapping
// intercept.ErrUncheckable: it cannot tell now), a JWT's signing key in
// the issuer's key set (Options.RecheckJWTKey), and a token's or a
// certificate's agent, owner, among the names API keys are issued for
// (Options.RecheckAgent); a credential that can lapse in a way the record
// cannot tell is taken as lapsed (fail closed).
func (g *Gateway) storedLapsed(c *relayCredential, owner string) error {
	if c == nil {
		return nil
	}
	if !c.Expires.IsZero() && !time.Now().Before(c.Expires) {
		return errExpired
	}
	if c.Method != "api_key" && g.opts.RecheckAgent != nil {
		if err := g.opts.RecheckAgent(owner); err != nil {
			return err
		}
	}
	switch {
	case c.KeyID != "" && g.opts.RecheckKey != nil:
		return g.opts.RecheckKey(c.KeyID)
	case c.Method == "api_key":
		return errors.New("the API key cannot be checked on this replica")
	case c.JWTKey != "" && g.opts.RecheckJWTKey != nil:
		return g.opts.RecheckJWTKey(c.JWTKey)
	case c.JWTKey != "":
		return errors.New("the JWT's signing key cannot be checked on this replica")
	case c.Lapses && c.Expires.IsZero():
		return errors.New("the credential cannot be checked on this replica")
	}
	return nil
}

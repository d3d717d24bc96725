package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// API keys.
//
// A key is "sk_" + a 12-hex-digit id + "_" + 43 characters of base64url:
// 256 random bits. The key file keeps the id, the agent and the SHA-256
// of the secret part, never the key. A slow password hash (argon2id,
// bcrypt) exists to make guessing a low-entropy password from its hash
// expensive; a 256-bit random secret cannot be guessed whatever the hash
// costs, so a slow hash would only add milliseconds to every request.
// The id finds the one entry to compare, and the comparison of hashes is
// constant-time.

// KeyPrefix starts every API key; a bearer token with it is an API key.
const KeyPrefix = "sk_"

const (
	keyIDLen     = 12 // hex digits of the id
	keySecretLen = 43 // base64url characters of 32 bytes
	keyLen       = len(KeyPrefix) + keyIDLen + 1 + keySecretLen
)

// Key is one entry of the key file. It holds no secret.
type Key struct {
	ID      string     `json:"id"`
	Agent   string     `json:"agent"`
	Hash    string     `json:"sha256"` // hex SHA-256 of the secret part
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"` // nil: never
	Revoked *time.Time `json:"revoked,omitempty"` // nil: not revoked
}

// Status is "active", "expired" or "revoked" at now.
func (k *Key) Status(now time.Time) string {
	switch {
	case k.Revoked != nil:
		return "revoked"
	case k.Expires != nil && !now.Before(*k.Expires):
		return "expired"
	}
	return "active"
}

type keyFile struct {
	Keys []Key `json:"keys"`
}

var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$`)

// CreateKey adds a key for agent to the key file at path (creating it),
// valid for ttl (0: forever), and returns the key, which is shown once
// and kept nowhere.
func CreateKey(path, agent string, ttl time.Duration, now time.Time) (token string, k Key, err error) {
	if !agentName.MatchString(agent) {
		return "", Key{}, fmt.Errorf("agent name %q: use letters, digits and . _ : @ / - (at most 128, starting with a letter or digit)", agent)
	}
	if ttl < 0 {
		return "", Key{}, fmt.Errorf("expiry %v is negative", ttl)
	}
	var idb [keyIDLen / 2]byte
	var secret [32]byte
	_, _ = rand.Read(idb[:]) // crypto/rand.Read never fails (Go 1.24+)
	_, _ = rand.Read(secret[:])
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(s))
	k = Key{ID: hex.EncodeToString(idb[:]), Agent: agent, Hash: hex.EncodeToString(sum[:]), Created: now.UTC().Truncate(time.Second)}
	if ttl > 0 {
		e := k.Created.Add(ttl)
		k.Expires = &e
	}
	err = updateKeys(path, func(f *keyFile) error {
		f.Keys = append(f.Keys, k)
		return nil
	})
	return KeyPrefix + k.ID + "_" + s, k, err
}

// RevokeKey marks the key with id revoked. Revoking a revoked key is an
// error, so a typo is noticed.
func RevokeKey(path, id string, now time.Time) (Key, error) {
	var out Key
	err := updateKeys(path, func(f *keyFile) error {
		found, revoked := false, false
		for i := range f.Keys {
			if f.Keys[i].ID == id {
				// Every entry with the id: a merged or restored file may
				// hold two, and the gateway refuses such a file anyway.
				found = true
				if f.Keys[i].Revoked == nil {
					t := now.UTC().Truncate(time.Second)
					f.Keys[i].Revoked = &t
					revoked = true
				}
				out = f.Keys[i]
			}
		}
		switch {
		case !found:
			return fmt.Errorf("no key %q in %s; `sluice keys list` shows the ids", id, path)
		case !revoked:
			return fmt.Errorf("key %s is already revoked", id)
		}
		return nil
	})
	return out, err
}

// ListKeys returns the keys of the key file, oldest first; a missing file
// has none.
func ListKeys(path string) ([]Key, error) {
	f, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(f.Keys, func(i, j int) bool { return f.Keys[i].Created.Before(f.Keys[j].Created) })
	return f.Keys, nil
}

func readKeyFile(path string) (*keyFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &keyFile{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f keyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return &f, nil
}

// updateKeys changes the key file under an exclusive lock and replaces it
// atomically, so the gateway never reads half a file and two commands
// never lose each other's change (a lost revocation would revive a key).
func updateKeys(path string, change func(*keyFile) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer unlock()
	f, err := readKeyFile(path)
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".agent_keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// KeyStore authenticates API keys against a key file, rereading it when
// it changes (checked at most once a second). It is safe for concurrent
// use.
type KeyStore struct {
	path string
	now  func() time.Time

	cur       atomic.Pointer[keySet]
	nextCheck atomic.Int64 // unix nanoseconds of the next stat

	mu      sync.Mutex // guards the fields below
	stat    os.FileInfo
	last    *keySet       // what the last read found, which a stall's failure gives way to
	reading chan struct{} // closed when the read under way ends; nil when none is
}

// keyFileWait bounds how long a request waits for the key file to be read
// again: on a disk or network file system that stalls, the read may never
// end. Past it, every key fails (closed) until a read ends.
const keyFileWait = 2 * time.Second

type keySet struct {
	keys   map[string]*storedKey
	agents map[string]bool // every key's agent, revoked and expired keys' too
	err    error           // the file could not be read: every key fails
}

type storedKey struct {
	Key
	hash [sha256.Size]byte
}

// NewKeyStore reads the key file at path; a missing file holds no keys
// (yet). now may be nil for time.Now.
func NewKeyStore(path string, now func() time.Time) (*KeyStore, error) {
	if now == nil {
		now = time.Now
	}
	s := &KeyStore{path: path, now: now}
	s.reread()
	if err := s.cur.Load().err; err != nil {
		return nil, err
	}
	return s, nil
}

// refresh rereads the file at most once a second.
func (s *KeyStore) refresh() {
	if n := s.now().UnixNano(); n >= s.nextCheck.Load() {
		s.nextCheck.Store(n + int64(time.Second))
		s.reread()
	}
}

// reread has the file read again if it changed, one read at a time, and
// waits for that read at most keyFileWait: a read that stalls (a hung
// disk or NFS mount) held the request that started it for ever, and one
// more each second behind its lock, while the keys read before, revoked
// since or not, went on authenticating; now every key fails, closed,
// until a read ends.
func (s *KeyStore) reread() {
	s.mu.Lock()
	done := s.reading
	if done == nil {
		done = make(chan struct{})
		s.reading = done
		go s.reload(done)
	}
	s.mu.Unlock()
	t := time.NewTimer(keyFileWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.mu.Lock()
		if s.reading == done {
			s.cur.Store(&keySet{err: fmt.Errorf("key file %s: reading it has not finished in %s (its disk or file system stalls)", s.path, keyFileWait)})
		}
		s.mu.Unlock()
	}
}

// reload reads the file if it changed since the last read, then closes
// done. A file that cannot be read fails every key, closed, until it is
// fixed.
func (s *KeyStore) reload(done chan struct{}) {
	ks, fi, changed := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	s.reading = nil
	if changed {
		s.stat, s.last = fi, ks
	}
	// Unchanged, the set read before stands again (a stall had failed
	// every key meanwhile).
	s.cur.Store(s.last)
}

// read reads the file unless it is the one last read, unchanged.
func (s *KeyStore) read() (ks *keySet, fi os.FileInfo, changed bool) {
	s.mu.Lock()
	last := s.stat
	s.mu.Unlock()
	fi, err := os.Stat(s.path)
	if err == nil && last != nil && os.SameFile(fi, last) && fi.ModTime().Equal(last.ModTime()) && fi.Size() == last.Size() {
		return nil, nil, false
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &keySet{err: err}, nil, true // read again next time, whatever Stat says then
	}
	f, err := readKeyFile(s.path)
	if err != nil {
		return &keySet{err: err}, nil, true
	}
	ks = &keySet{keys: make(map[string]*storedKey, len(f.Keys)), agents: make(map[string]bool, len(f.Keys))}
	for _, k := range f.Keys {
		sk := &storedKey{Key: k}
		if h, err := hex.DecodeString(k.Hash); err != nil || len(h) != sha256.Size {
			ks.err = fmt.Errorf("key file %s: key %s: sha256 is not 64 hex digits", s.path, k.ID)
			break
		} else {
			copy(sk.hash[:], h)
		}
		if _, dup := ks.keys[k.ID]; dup {
			ks.err = fmt.Errorf("key file %s: key id %s appears twice; revoke or remove one (every key fails until then)", s.path, k.ID)
			break
		}
		ks.keys[k.ID] = sk
		ks.agents[k.Agent] = true
	}
	return ks, fi, true
}

// namesAgent reports whether a key in the file, whatever its status, is
// issued for agent. The file is read again at most once a second, as by
// Authenticate; one that cannot be read is an error (it cannot tell).
func (s *KeyStore) namesAgent(agent string) (bool, error) {
	s.refresh()
	ks := s.cur.Load()
	if ks.err != nil {
		return false, fmt.Errorf("the key file cannot be read: %w", intercept.ErrUncheckable)
	}
	return ks.agents[agent], nil
}

// Authenticate returns the principal of an API key, or a *Failure.
func (s *KeyStore) Authenticate(token string) (*intercept.Principal, error) {
	s.refresh()
	now := s.now()
	if len(token) != keyLen || token[len(KeyPrefix)+keyIDLen] != '_' {
		return nil, invalidToken(ModeAPIKey, "malformed API key", nil)
	}
	id, secret := token[len(KeyPrefix):len(KeyPrefix)+keyIDLen], token[len(KeyPrefix)+keyIDLen+1:]
	ks := s.cur.Load()
	if ks.err != nil {
		return nil, invalidToken(ModeAPIKey, "the key file cannot be read", ks.err)
	}
	k := ks.keys[id]
	sum := sha256.Sum256([]byte(secret))
	if k == nil || subtle.ConstantTimeCompare(sum[:], k.hash[:]) != 1 {
		return nil, invalidToken(ModeAPIKey, "unknown API key", nil)
	}
	switch k.Status(now) {
	case "revoked":
		return nil, invalidToken(ModeAPIKey, "the API key was revoked", nil)
	case "expired":
		return nil, invalidToken(ModeAPIKey, "the API key expired", nil)
	}
	if !agentName.MatchString(k.Agent) {
		// `sluice keys create` never writes one; a file edited, merged or
		// restored by hand might: an empty agent, or "\u0430lice" that logs
		// and manifests cannot tell from alice.
		return nil, invalidToken(ModeAPIKey, "the key file names no valid agent for this key; create it again with sluice keys create", nil)
	}
	hash, agent := k.hash, k.Agent
	return &intercept.Principal{ID: k.Agent, Method: ModeAPIKey, Claims: map[string]any{"key_id": k.ID},
		Check: func() error { return s.stillSame(id, hash, agent) }}, nil
}

// stillSame is stillGood for the key authenticated as holding hash and
// naming agent: the key file may have its id with another secret or
// agent since (edited by hand, restored, a rotation that kept the id),
// and a connection opened with the old secret must not outlive it.
func (s *KeyStore) stillSame(id string, hash [sha256.Size]byte, agent string) error {
	if err := s.stillGood(id); err != nil {
		return err
	}
	k := s.cur.Load().keys[id]
	if k == nil || k.hash != hash || k.Agent != agent {
		return errors.New("the API key was replaced in the key file (another secret or agent under its id)")
	}
	return nil
}

// stillGood reports why the key with id no longer holds, or nil: the
// key file is read again at most once a second, as by Authenticate.
func (s *KeyStore) stillGood(id string) error {
	s.refresh()
	now := s.now()
	ks := s.cur.Load()
	if ks.err != nil {
		return fmt.Errorf("the key file cannot be read: %w", intercept.ErrUncheckable)
	}
	k := ks.keys[id]
	if k == nil {
		return errors.New("the API key is gone from the key file")
	}
	switch k.Status(now) {
	case "revoked":
		return errors.New("the API key was revoked")
	case "expired":
		return errors.New("the API key expired")
	}
	return nil
}

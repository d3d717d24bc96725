// Package redisstore keeps the policy's route memory in Redis, so that
// every replica of a gateway sees the sources an agent touched through any
// of them: a sink called through replica B after a sensitive read through
// replica A is denied as it would be on one gateway.
//
// Each memory (policy.Key) is one hash, prefix + Key.String(), whose fields
// are labels and values the Unix nanoseconds they were last forwarded at.
// A write keeps the later of the stored and the new time (one Lua script,
// so concurrent replicas cannot move a label back in time) and renews the
// hash's expiry. A read is one HMGET (with a GET of the epoch key, which
// tells memory Redis lost from memory never written). Errors (Redis down, a timeout) are
// returned, and the policy denies the pending call with policy_error: route
// memory fails closed. So that Redis never forgets on its own, New refuses
// a server that may evict keys under memory pressure, and the policy
// rejects route rules whose windows are longer than the TTL.
package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/rediseviction"
	"github.com/sluicehq/sluice/policy"
)

// Defaults of [Options].
const (
	DefaultKeyPrefix = "sluice:mem:"
	DefaultTTL       = 30 * 24 * time.Hour
	DefaultTimeout   = 500 * time.Millisecond
)

// EpochFileName is the name the gateway gives Options.EpochFile in its
// data directory.
const EpochFileName = "route-memory-epoch"

// Options configures a [Store].
type Options struct {
	// URL is the server's redis:// or rediss:// (TLS) URL, with the
	// password and database number if needed:
	// redis://:password@host:6379/0.
	URL string
	// KeyPrefix starts every key; zero means DefaultKeyPrefix. Gateways
	// that must not share memory use different prefixes.
	KeyPrefix string
	// TTL is how long a memory is kept after its last write; zero means
	// DefaultTTL. A policy whose route rules' windows are longer is
	// rejected (see policy.Retainer); rules without a window see back this
	// far.
	TTL time.Duration
	// Timeout bounds each Remember and Seen, every command, retry and
	// wait for a connection included; zero means DefaultTimeout. A
	// decision waiting on Redis waits at most this long before it is
	// denied.
	Timeout time.Duration
	// EpochFile, if set, is a file where the store notes the epoch key's
	// value it last saw. Redis may lose its data while no gateway runs (a
	// restart without persistence); a start that finds the key gone, or
	// started over since, then counts as a loss like one seen while
	// running, rather than as a server that never had any memory. New
	// fails (EpochFileError) when it cannot read the file or note the
	// epoch in it: its directory must exist and be writable.
	EpochFile string
	// OnEpochFileError, if set, is told when the epoch cannot be noted in
	// EpochFile while the store runs: calls go on (this store knows of the
	// loss), but the next start, finding the older note, would refuse.
	OnEpochFileError func(error)
}

// Store is a policy.Store in Redis. It is safe for concurrent use.
type Store struct {
	rdb     *redis.Client
	prefix  string
	ttl     time.Duration
	timeout time.Duration // bounds each Remember and Seen, retries and pool waits included
	addr    string        // the server's, for errors: policy names the store "route memory"

	// The epoch key tells a Redis that lost its data (restarted without
	// persistence, flushed) from one that never had any (writes lost
	// with the key kept, by a failover to a replica that had not caught
	// up or a restart from an older snapshot, are not noticed: the
	// README says how an operator marks them, "lost:" and the time): it is written when the memory starts, and
	// a read that finds it gone or changed records when the memory was
	// lost. Memory from before then is unknown: Seen answers ErrEvicted
	// for a window reaching back past it (route_memory_evicted) rather
	// than "never touched".
	mu        sync.Mutex
	epoch     string    // the epoch key's value as last seen
	lostAt    time.Time // when the memory was last found lost; zero: never
	epochFile string    // where epoch is noted for the next start ("": nowhere)
	onFileErr func(error)
}

// Values of the epoch key: "fresh:" or "lost:" and Unix nanoseconds, or
// "accepted:" and anything, which an operator sets to say the loss is
// accepted and agents are to be taken as clean again (README).
const (
	epochFresh    = "fresh:"
	epochLost     = "lost:"
	epochAccepted = "accepted:"
)

// epochKey is prefix + "epoch": memories' keys start "agent:" or
// "session:", so it is none of them.
func (s *Store) epochKey() string { return s.prefix + "epoch" }

// adopt records epoch, the epoch key's value, as the one seen, and notes
// it in the epoch file for the next start. The note's error is returned,
// with epoch taken as seen all the same: while running, a note that could
// not be written leaves the file with the value it had, which the next
// start finds changed and counts as a loss, so the lookup goes on; at
// start (startEpoch), with nothing noted yet, it is fatal.
func (s *Store) adopt(epoch string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if epoch != s.epoch && s.epochFile != "" {
		if werr := writeFileAtomic(s.epochFile, []byte(epoch+"\n")); werr != nil {
			err = &EpochFileError{Name: s.epochFile, Err: werr}
		}
	}
	s.take(epoch)
	return err
}

// take records epoch as the one seen. Callers hold s.mu.
func (s *Store) take(epoch string) {
	s.epoch = epoch
	if strings.HasPrefix(epoch, epochAccepted) {
		s.lostAt = time.Time{}
		return
	}
	if ns, ok := strings.CutPrefix(epoch, epochLost); ok {
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			if t := time.Unix(0, n); t.After(s.lostAt) {
				s.lostAt = t
			}
		}
	}
}

// checkEpoch compares the epoch key's value got (nil: missing) with the
// one seen; when the memory was lost meanwhile it records that (once,
// for every replica) and returns when. It returns the time memory is
// known from: zero when nothing was lost.
func (s *Store) checkEpoch(ctx context.Context, got *string) (time.Time, error) {
	s.mu.Lock()
	same := got != nil && *got == s.epoch
	lost := s.lostAt
	s.mu.Unlock()
	if same {
		return lost, nil
	}
	if got == nil {
		// Gone: Redis lost its data. The first replica to see it says so.
		v := epochLost + strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := s.rdb.SetNX(ctx, s.epochKey(), v, 0).Err(); err != nil {
			return time.Time{}, err
		}
		cur, err := s.rdb.Get(ctx, s.epochKey()).Result()
		if err != nil {
			return time.Time{}, err
		}
		got = &cur
	}
	if ns, ok := strings.CutPrefix(*got, epochFresh); ok {
		// Another process started the memory over after it was lost
		// and before this one noticed: it was lost all the same, and
		// is known from then. That process (a replica started without
		// an epoch file) took Redis as new: the key says it was lost,
		// for it and for any started later
		// (TestAttackReplicaStartedAfterLossSeesIt).
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			n = time.Now().UnixNano()
		}
		s.mu.Lock()
		if t := time.Unix(0, n); t.After(s.lostAt) {
			s.lostAt = t
		}
		s.mu.Unlock()
		v, err := markLost.Run(ctx, s.rdb, []string{s.epochKey()}, *got, epochLost+strconv.FormatInt(n, 10)).Text()
		if err != nil {
			return time.Time{}, err
		}
		got = &v
	}
	if err := s.adopt(*got); err != nil && s.onFileErr != nil {
		s.onFileErr(err) // the file keeps an older epoch: see adopt
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostAt, nil
}

// EpochFileError is a failure to read or note the epoch in
// Options.EpochFile at start: New refuses to start rather than run with
// no record of what Redis held, which would let a loss of its data while
// no gateway runs go unnoticed (every agent clean again).
type EpochFileError struct {
	Name string // the file
	Err  error
}

func (e *EpochFileError) Error() string {
	return fmt.Sprintf("route memory epoch file %s: %v (it records what Redis held, so that a loss of its data while no gateway runs is noticed; free space or make data_dir writable)", e.Name, e.Err)
}

func (e *EpochFileError) Unwrap() error { return e.Err }

var (
	_ policy.Store    = (*Store)(nil)
	_ policy.Retainer = (*Store)(nil)
)

// remember sets each label (ARGV[3:]) to the time ARGV[1] unless it holds a
// later one, and renews the key's expiry (ARGV[2], milliseconds).
var remember = redis.NewScript(`
local at = tonumber(ARGV[1])
for i = 3, #ARGV do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if cur == nil or cur < at then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[1])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0
`)

// markLost sets the epoch key to ARGV[2], a "lost:" value, if it holds
// ARGV[1], the "fresh:" value of a process that took Redis as new after a
// loss, or nothing; it returns the key's value.
var markLost = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return v end
redis.call('SET', KEYS[1], ARGV[2])
return ARGV[2]
`)

// New connects to the server at opts.URL and checks that it answers.
func New(ctx context.Context, opts Options) (*Store, error) {
	ro, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("route memory: redis URL: %w", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = timeout, timeout, timeout
	ro.MaxRetries = 1
	// Each operation's deadline (timeout) bounds its commands: without
	// it a stalled server held a lookup for a read timeout per attempt
	// and per command, and calls queued for a connection for a pool
	// timeout per attempt (with 500ms, 2 s alone and 3.7 s with 300 at
	// once).
	ro.ContextTimeoutEnabled = true
	s := &Store{rdb: redis.NewClient(ro), prefix: opts.KeyPrefix, ttl: opts.TTL, timeout: timeout, addr: ro.Addr, epochFile: opts.EpochFile, onFileErr: opts.OnEpochFileError}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("route memory: redis at %s: %w", ro.Addr, err)
	}
	if err := s.checkEviction(ctx); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("route memory: redis at %s: %w", ro.Addr, err)
	}
	if err := s.startEpoch(ctx); err != nil {
		s.rdb.Close()
		if fe := (*EpochFileError)(nil); errors.As(err, &fe) {
			return nil, fmt.Errorf("route memory: %w", err)
		}
		return nil, fmt.Errorf("route memory: redis at %s: %w", ro.Addr, err)
	}
	return s, nil
}

// startEpoch adopts the epoch key's value, writing a fresh one if it is
// missing. With an epoch file holding what an earlier run saw, a missing
// or changed key is a loss (checkEpoch), not a fresh start. The file must
// end up holding the key's value (EpochFileError): a run that noted
// nothing would take a Redis that lost its data before the next start
// as new.
func (s *Store) startEpoch(ctx context.Context) error {
	var prev []byte
	if s.epochFile != "" {
		b, err := os.ReadFile(s.epochFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &EpochFileError{Name: s.epochFile, Err: err}
		}
		prev = bytes.TrimSpace(b)
	}
	if len(prev) > 0 {
		s.mu.Lock()
		s.take(string(prev)) // as the file holds it: nothing to note
		s.mu.Unlock()
		got, err := s.rdb.Get(ctx, s.epochKey()).Result()
		var cur *string
		switch {
		case err == nil:
			cur = &got
		case !errors.Is(err, redis.Nil):
			return err
		}
		if _, err = s.checkEpoch(ctx, cur); err != nil {
			return err
		}
		return s.noted()
	}
	if err := s.rdb.SetNX(ctx, s.epochKey(), epochFresh+strconv.FormatInt(time.Now().UnixNano(), 10), 0).Err(); err != nil {
		return err
	}
	epoch, err := s.rdb.Get(ctx, s.epochKey()).Result()
	if err != nil {
		return err
	}
	return s.adopt(epoch)
}

// noted checks at start that the epoch file holds the epoch adopted, and
// writes it if it does not (checkEpoch goes on past a failed write).
func (s *Store) noted() error {
	if s.epochFile == "" {
		return nil
	}
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	if b, err := os.ReadFile(s.epochFile); err == nil && string(bytes.TrimSpace(b)) == epoch {
		return nil
	}
	if err := writeFileAtomic(s.epochFile, []byte(epoch+"\n")); err != nil {
		return &EpochFileError{Name: s.epochFile, Err: err}
	}
	return nil
}

// checkEviction refuses a server that may evict keys when it runs out of
// memory: an evicted memory would read as an agent that touched nothing.
// With noeviction a full server fails writes instead, and the calls
// waiting on them are denied. A server that does not allow CONFIG GET
// (some managed services) is checked with INFO memory, one that allows
// neither is not; one that does not answer is an error.
func (s *Store) checkEviction(ctx context.Context) error {
	policy, mm, evicts, err := rediseviction.Policy(ctx, s.rdb)
	if err != nil {
		return fmt.Errorf("the server did not say whether it may evict route memory: %w", err)
	}
	if evicts {
		return fmt.Errorf("maxmemory-policy is %s with maxmemory %s, so Redis may evict route memory, which would let a sink through after a forgotten source; set maxmemory-policy noeviction (or maxmemory 0) on the server sluice uses", policy, mm)
	}
	return nil
}

// Retention implements policy.Retainer: a memory is kept TTL after its
// last write, so route rules' windows may be at most that long.
func (s *Store) Retention() time.Duration { return s.ttl }

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

func (s *Store) key(k policy.Key) string { return s.prefix + k.String() }

// Remember implements policy.Store.
func (s *Store) Remember(ctx context.Context, k policy.Key, labels []string, at time.Time) error {
	if len(labels) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := make([]any, 0, len(labels)+2)
	args = append(args, at.UnixNano(), s.ttl.Milliseconds())
	for _, l := range labels {
		args = append(args, l)
	}
	if err := remember.Run(ctx, s.rdb, []string{s.key(k)}, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redis at %s: %w", s.addr, err)
	}
	return nil
}

// Seen implements policy.Store.
func (s *Store) Seen(ctx context.Context, k policy.Key, labels []string, since time.Time) (bool, error) {
	if len(labels) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.rdb.Pipeline()
	hm := pipe.HMGet(ctx, s.key(k), labels...)
	ep := pipe.Get(ctx, s.epochKey())
	_, _ = pipe.Exec(ctx)
	vals, err := hm.Result()
	if err != nil {
		return false, fmt.Errorf("redis at %s: %w", s.addr, err)
	}
	var epoch *string
	switch e, err := ep.Result(); {
	case err == nil:
		epoch = &e
	case !errors.Is(err, redis.Nil):
		return false, fmt.Errorf("redis at %s: %w", s.addr, err)
	}
	known, err := s.checkEpoch(ctx, epoch)
	if err != nil {
		return false, fmt.Errorf("redis at %s: %w", s.addr, err)
	}
	for _, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // nil: never remembered
		}
		ns, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return false, fmt.Errorf("redis at %s: %s holds %q, not a time", s.addr, s.key(k), str)
		}
		if ns >= since.UnixNano() {
			return true, nil
		}
	}
	if since.Before(known) {
		return false, policy.ErrEvicted
	}
	return false, nil
}

// writeFileAtomic replaces name with b, through a temporary file renamed
// over it, so a crash leaves the old content or the new.
func writeFileAtomic(name string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Package sqlitestore keeps the policy's route memory in a SQLite file,
// so that every process using the same data directory sees the sources an
// agent touched through any of them: a desktop client runs one `sluice
// wrap` per server, and a sink called through one after a sensitive read
// through another is denied as it would be through one gateway.
//
// One row per (memory, label) holds the Unix nanoseconds the label was
// last forwarded at; a write keeps the later of the stored and the new
// time (an upsert, so concurrent processes cannot move a label back in
// time). Rows not written for longer than the TTL are deleted, and the
// policy rejects route rules whose windows are longer than the TTL
// (policy.Retainer). Errors (a locked or unwritable file) are returned,
// and the policy denies the pending call with policy_error: route memory
// fails closed.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/sqlitefile"
	"github.com/sluicehq/sluice/policy"
)

// FileName is the route memory's database in a data directory.
const FileName = "route-memory.db"

// DefaultTTL is how long a memory is kept after its last write.
const DefaultTTL = 30 * 24 * time.Hour

// pruneEvery is how many writes pass between deletions of expired rows.
const pruneEvery = 1000

// Store is a policy.Store in a SQLite file. It is safe for concurrent use,
// by several processes too.
type Store struct {
	db     *sql.DB
	path   string // for errors: policy names the store "route memory"
	ttl    time.Duration
	writes atomic.Int64
}

var (
	_ policy.Store    = (*Store)(nil)
	_ policy.Retainer = (*Store)(nil)
)

// Open opens or creates the store at path (its directory too); ttl zero
// means DefaultTTL.
func Open(path string, ttl time.Duration) (*Store, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	db, abs, err := sqlitefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("route memory: %w", err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS memory (
		key TEXT NOT NULL, label TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (key, label)) WITHOUT ROWID`); err != nil {
		db.Close()
		return nil, fmt.Errorf("route memory: %s: %w", path, err)
	}
	if err := os.Chmod(abs, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("route memory: %w", err)
	}
	s := &Store{db: db, path: abs, ttl: ttl}
	if err := s.prune(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("route memory: %w", err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Retention is the TTL: see policy.Retainer.
func (s *Store) Retention() time.Duration { return s.ttl }

// Remember records that labels were forwarded under k at time at, keeping
// a later time already stored.
func (s *Store) Remember(ctx context.Context, k policy.Key, labels []string, at time.Time) error {
	if len(labels) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO memory (key, label, at) VALUES `)
	args := make([]any, 0, 3*len(labels))
	key := k.String()
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?, ?)")
		args = append(args, key, l, at.UnixNano())
	}
	b.WriteString(` ON CONFLICT (key, label) DO UPDATE SET at = max(at, excluded.at)`)
	if _, err := s.db.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("%s: remembering: %w", s.path, err)
	}
	if s.writes.Add(1)%pruneEvery == 0 {
		return s.prune(ctx)
	}
	return nil
}

// Seen reports whether any of labels was remembered under k at or after
// since, within the TTL.
func (s *Store) Seen(ctx context.Context, k policy.Key, labels []string, since time.Time) (bool, error) {
	if len(labels) == 0 {
		return false, nil
	}
	if floor := time.Now().Add(-s.ttl); since.Before(floor) {
		since = floor // an expired row not yet deleted counts as gone
	}
	args := make([]any, 0, 2+len(labels))
	args = append(args, k.String(), since.UnixNano())
	for _, l := range labels {
		args = append(args, l)
	}
	q := `SELECT 1 FROM memory WHERE key = ? AND at >= ? AND label IN (?` + strings.Repeat(",?", len(labels)-1) + `) LIMIT 1`
	var one int
	switch err := s.db.QueryRowContext(ctx, q, args...).Scan(&one); err {
	case nil:
		return true, nil
	case sql.ErrNoRows:
		return false, nil
	default:
		return false, fmt.Errorf("%s: reading: %w", s.path, err)
	}
}

// prune deletes the rows not written within the TTL.
func (s *Store) prune(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM memory WHERE at < ?`, time.Now().Add(-s.ttl).UnixNano()); err != nil {
		return fmt.Errorf("%s: deleting expired memories: %w", s.path, err)
	}
	return nil
}

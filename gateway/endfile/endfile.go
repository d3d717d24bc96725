// Package endfile records in a SQLite file which sealed sessions their
// clients ended (gateway.SessionEnds), for a gateway whose sealed
// sessions outlive it without a shared Redis: a restarted gateway with
// the same session keys would otherwise serve an ended session's id
// again. Every process on the file sees the others' records.
//
// One row per ended session: the SHA-256 of its id (the id itself, which
// lets a caller use the session, is not written) and when its record
// may go (Unix nanoseconds; the id's expiry), indexed. Expired rows are
// deleted every pruneEvery writes. Errors are returned: the gateway fails closed.
package endfile

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/sqlitefile"
)

// FileName is the file in a data directory.
const FileName = "session-ends.db"

// pruneEvery is how many writes pass between deletions of expired rows.
const pruneEvery = 100

// File is a gateway.SessionEnds in a SQLite file. It is safe for
// concurrent use, by several processes too.
type File struct {
	db     *sql.DB
	now    func() time.Time
	writes atomic.Int64
}

// Open opens or creates the file at path.
func Open(path string) (*File, error) {
	db, abs, err := sqlitefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ended sessions: %w", err)
	}
	// Indexed by expiry too, so that pruning reads the rows it deletes,
	// not every row: a flood of DELETEs keeps millions.
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ended (h BLOB PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE INDEX IF NOT EXISTS ended_until ON ended (until)`,
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, fmt.Errorf("ended sessions: %s: %w", path, err)
		}
	}
	if err := os.Chmod(abs, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("ended sessions: %w", err)
	}
	f := &File{db: db, now: time.Now}
	if err := f.prune(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("ended sessions: %w", err)
	}
	return f, nil
}

// Close closes the database.
func (f *File) Close() error { return f.db.Close() }

func key(session string) []byte {
	h := sha256.Sum256([]byte(session))
	return h[:]
}

// EndSession records that session was ended, for ttl (0: for good).
func (f *File) EndSession(ctx context.Context, session string, ttl time.Duration) error {
	until := int64(math.MaxInt64)
	if ttl > 0 {
		until = f.now().Add(ttl).UnixNano()
	}
	if _, err := f.db.ExecContext(ctx, `INSERT INTO ended (h, until) VALUES (?, ?) ON CONFLICT (h) DO UPDATE SET until = max(until, excluded.until)`, key(session), until); err != nil {
		return fmt.Errorf("ended sessions: %w", err)
	}
	if f.writes.Add(1)%pruneEvery == 0 {
		_ = f.prune(ctx) // the next prune deletes what this one did not
	}
	return nil
}

// SessionEnded reports whether EndSession recorded session, and its
// record has not expired.
func (f *File) SessionEnded(ctx context.Context, session string) (bool, error) {
	var n int
	err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM ended WHERE h = ? AND until > ?`, key(session), f.now().UnixNano()).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("ended sessions: %w", err)
	}
	return n > 0, nil
}

// pruneQuery deletes the rows expired by its argument.
const pruneQuery = `DELETE FROM ended WHERE until <= ?`

func (f *File) prune(ctx context.Context) error {
	_, err := f.db.ExecContext(ctx, pruneQuery, f.now().UnixNano())
	return err
}

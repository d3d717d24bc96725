package audit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// schemaVersion is PRAGMA user_version of a database this code writes.
const schemaVersion = 1

// The events table keeps Event's top-level fields as columns, to filter
// and index on, and Attrs as JSON text. time is Unix nanoseconds, UTC. seq
// is the append order and never goes backwards, which Tail relies on.
const schema = `
CREATE TABLE IF NOT EXISTS events (
	seq      INTEGER PRIMARY KEY,
	id       TEXT    NOT NULL,
	type     TEXT    NOT NULL,
	time     INTEGER NOT NULL,
	txn_id   TEXT    NOT NULL DEFAULT '',
	agent    TEXT    NOT NULL DEFAULT '',
	session  TEXT    NOT NULL DEFAULT '',
	upstream TEXT    NOT NULL DEFAULT '',
	tool     TEXT    NOT NULL DEFAULT '',
	decision TEXT    NOT NULL DEFAULT '',
	reason   TEXT    NOT NULL DEFAULT '',
	attrs    TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS events_id ON events(id);
CREATE INDEX IF NOT EXISTS events_time ON events(time);
CREATE INDEX IF NOT EXISTS events_txn ON events(txn_id) WHERE txn_id != '';
CREATE INDEX IF NOT EXISTS events_agent ON events(agent, time);
CREATE INDEX IF NOT EXISTS events_session ON events(session, time);
CREATE INDEX IF NOT EXISTS events_tool ON events(tool, time);
PRAGMA user_version = 1;
`

// columns is the number of values insertSQL takes per row.
const columns = 11

// rowsPerInsert is how many rows the writer inserts with one statement.
const rowsPerInsert = 32

// insertSQL returns the INSERT of n rows. It ignores an id already
// stored, so appending the same event twice (a retry after an ambiguous
// error) keeps one copy.
func insertSQL(n int) string {
	var b strings.Builder
	b.WriteString("INSERT OR IGNORE INTO events (id, type, time, txn_id, agent, session, upstream, tool, decision, reason, attrs) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?)")
	}
	return b.String()
}

// dsn is the SQLite URI of the database at path. Every connection waits
// up to 10s for a lock; writable ones use the write-ahead log with a full
// fsync at each commit, which is what makes an acknowledged append
// durable; transactions take the write lock at BEGIN so two writers
// queue rather than fail on upgrade.
func dsn(path string, readOnly bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("audit: %s: %w", path, err)
	}
	u := url.URL{Scheme: "file", Path: abs}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	}
	return u.String() + "?" + q.Encode(), nil
}

func migrate(ctx context.Context, db *sql.DB, readOnly bool) error {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	switch {
	case v == schemaVersion:
		return nil
	case v > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this Sluice knows (%d); upgrade Sluice", v, schemaVersion)
	case readOnly:
		return fmt.Errorf("not an event database (schema version %d)", v)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	return nil
}

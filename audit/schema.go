package audit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// schemaVersion is PRAGMA user_version of a database this code writes.
const schemaVersion = 2

// Events are stored in blocks: each commit of the writer is one block of
// consecutive events (seq first_seq..last_seq), kept as JSON Lines
// compressed with S2 (github.com/klauspost/compress/s2, the block format)
// in block_data. blocks holds what queries narrow on without reading the
// events: the seq and time ranges, and a Bloom filter of the block's txn
// ids. block_keys lists, for each block, the distinct agents, sessions,
// upstreams, tools, decisions and types in it ("agent=alice"; blocks.keys
// lists them too, as a JSON array, for pruning), so a query for one agent reads only the
// blocks that hold it.
//
// A block costs a few rows however many events it holds, which is what
// lets the store keep up with a busy gateway for a few microseconds of CPU
// per event: a row and six index entries per event cost several times
// that in SQLite.
const schema = `
CREATE TABLE IF NOT EXISTS blocks (
	first_seq INTEGER PRIMARY KEY,
	last_seq  INTEGER NOT NULL,
	min_time  INTEGER NOT NULL,
	max_time  INTEGER NOT NULL,
	txn_bloom BLOB,
	keys      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS blocks_max_time ON blocks(max_time);
CREATE TABLE IF NOT EXISTS block_data (
	first_seq INTEGER PRIMARY KEY,
	events    BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS block_keys (
	key       TEXT    NOT NULL,
	first_seq INTEGER NOT NULL,
	PRIMARY KEY (key, first_seq)
) WITHOUT ROWID;
`

// dsn is the SQLite URI of the database at path. Every connection waits
// up to 10s for a lock; writable ones use the write-ahead log, and with
// sync an fsync of it at each commit (synchronous=FULL), which is what
// makes an acknowledged append survive a power loss; without, a commit
// survives the process being killed but the last ones may not survive
// the machine losing power (synchronous=NORMAL). Transactions take the
// write lock at BEGIN so two writers queue rather than fail on upgrade.
func dsn(path string, readOnly, sync bool) (string, error) {
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
		if sync {
			q.Add("_pragma", "synchronous(FULL)")
		} else {
			q.Add("_pragma", "synchronous(NORMAL)")
		}
		q.Set("_txlock", "immediate") // for database/sql transactions; the writer says BEGIN IMMEDIATE itself
	}
	return u.String() + "?" + q.Encode(), nil
}

// addKeysColumn gives blocks its keys column in a database written before
// it existed (an early schema 2), filled in from block_keys.
func addKeysColumn(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info('blocks') WHERE name = 'keys'").Scan(&n); err != nil {
		return fmt.Errorf("reading the schema: %w", err)
	}
	if n > 0 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("upgrading the schema: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		"ALTER TABLE blocks ADD COLUMN keys TEXT NOT NULL DEFAULT '[]'",
		`UPDATE blocks SET keys = (SELECT coalesce(json_group_array(key), '[]') FROM
			(SELECT key FROM block_keys k WHERE k.first_seq = blocks.first_seq ORDER BY key))`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("upgrading the schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("upgrading the schema: %w", err)
	}
	return nil
}

func migrate(ctx context.Context, db *sql.DB, readOnly bool) error {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	switch {
	case v == schemaVersion && !readOnly:
		return addKeysColumn(ctx, db)
	case v == schemaVersion:
		return nil
	case v > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this Sluice knows (%d); upgrade Sluice", v, schemaVersion)
	case readOnly && v == 1:
		return fmt.Errorf("event database of an older Sluice (schema version 1): start the gateway on this data directory once to upgrade it")
	case readOnly:
		return fmt.Errorf("not an event database (schema version %d)", v)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	if v == 1 {
		if err := migrateRows(ctx, tx); err != nil {
			return fmt.Errorf("upgrading from schema version 1: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	return nil
}

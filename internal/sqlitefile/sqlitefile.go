// Package sqlitefile opens the small SQLite files the gateway keeps in
// its data directory (route memory, ended sessions): private to the
// user, shared by every process on the directory.
package sqlitefile

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/sluicehq/sluice/internal/privatefile"
)

// Open opens or creates the database at path, its directory too (0700),
// and says its absolute path,
// refusing a file that privatefile.Prepare refuses. Writers wait up to 5 s
// for each other (busy_timeout) and take the write lock when a transaction
// begins; the journal is a write-ahead log, synced at checkpoints.
func Open(path string) (db *sql.DB, abs string, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, "", err
	}
	if err := privatefile.Prepare(abs); err != nil {
		return nil, "", err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err = sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs}).String()+"?"+q.Encode())
	return db, abs, err
}

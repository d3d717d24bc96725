package approval

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// FileName is the approvals database's name in a data directory.
const FileName = "approvals.db"

// OpenStore returns a Store that keeps its requests in the SQLite database
// at path (created, with its directory, if missing), so that a restarted
// process, or another process opening the same file, sees them: a call
// held by one `sluice wrap` can be approved through another's admin API,
// or after a restart. Every operation reads the file's current state and
// writes its changes in one transaction; Wait polls the file. Unless
// opts.StateKey is set, the requestState key is kept in the file too, so
// that a state sealed by one process opens in another. Close releases the
// file.
func OpenStore(path string, opts Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("approval: creating data directory: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("approval: %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate") // every transaction may write: take the lock at once
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs}).String()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("approval: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	key, err := migrateApprovals(db, opts.StateKey)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("approval: %s: %w", path, err)
	}
	opts.StateKey = key
	s := NewStore(opts)
	s.db = db
	s.snap = map[string]string{}
	return s, nil
}

func migrateApprovals(db *sql.DB, key []byte) ([]byte, error) {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS requests (
			id TEXT PRIMARY KEY,
			data TEXT NOT NULL,   -- the Request as JSON
			linked INTEGER NOT NULL, -- 1 if it answers its agent's call (Store.byCall)
			done_seq INTEGER      -- order of finishing, NULL while live
		)`,
		`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v BLOB NOT NULL)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	if key == nil {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh) // never fails (crypto/rand)
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO meta (k, v) VALUES ('state_key', ?)`, fresh); err != nil {
			return nil, err
		}
		if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'state_key'`).Scan(&key); err != nil {
			return nil, err
		}
		if len(key) != 32 {
			return nil, fmt.Errorf("the stored requestState key is %d bytes, want 32", len(key))
		}
	}
	return key, tx.Commit()
}

// Close releases the database of a Store from OpenStore; for a memory
// Store it does nothing.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// lock takes s.mu and, for a persistent Store, begins a transaction and
// replaces the memory state with the file's. On error s.mu is held all
// the same (unlock releases it) and the memory state is the last known.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.db == nil {
		return nil
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("approval: reading the approvals database: %w", err)
	}
	if err := s.load(tx); err != nil {
		tx.Rollback()
		return fmt.Errorf("approval: reading the approvals database: %w", err)
	}
	s.tx = tx
	return nil
}

func (s *Store) load(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT id, data, linked, done_seq FROM requests ORDER BY done_seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	byID, byCall, snap := map[string]*Request{}, map[string]*Request{}, map[string]string{}
	var done []string
	live := 0
	for rows.Next() {
		var id, data string
		var linked bool
		var seq sql.NullInt64
		if err := rows.Scan(&id, &data, &linked, &seq); err != nil {
			return err
		}
		r := new(Request)
		if err := json.Unmarshal([]byte(data), r); err != nil {
			return fmt.Errorf("request %s: %w", id, err)
		}
		if string(r.Arguments) == "null" {
			r.Arguments = nil // a finished request's, as in memory
		}
		byID[r.ID] = r
		snap[r.ID] = rowKey(data, linked)
		if linked {
			byCall[callKey(r.Agent, r.CallHash)] = r
		}
		if seq.Valid {
			done = append(done, r.ID)
		} else {
			live++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.byID, s.byCall, s.snap, s.done, s.live = byID, byCall, snap, done, live
	return nil
}

func rowKey(data string, linked bool) string {
	if linked {
		return "1" + data
	}
	return "0" + data
}

// unlock writes what changed since lock, commits and releases s.mu. The
// error is lock's or the write's: then nothing was written.
func (s *Store) unlock(lockErr error) error {
	defer s.mu.Unlock()
	if lockErr != nil || s.tx == nil {
		return lockErr
	}
	tx := s.tx
	s.tx = nil
	if err := s.save(tx); err != nil {
		tx.Rollback()
		return fmt.Errorf("approval: writing the approvals database: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("approval: writing the approvals database: %w", err)
	}
	return nil
}

func (s *Store) save(tx *sql.Tx) error {
	for id := range s.snap {
		if _, ok := s.byID[id]; !ok {
			if _, err := tx.Exec(`DELETE FROM requests WHERE id = ?`, id); err != nil {
				return err
			}
		}
	}
	for id, r := range s.byID {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		linked := s.byCall[callKey(r.Agent, r.CallHash)] == r
		old, had := s.snap[id]
		if had && old == rowKey(string(data), linked) {
			continue
		}
		if _, err := tx.Exec(`INSERT INTO requests (id, data, linked, done_seq) VALUES (?, ?, ?, NULL)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data, linked = excluded.linked`, id, string(data), linked); err != nil {
			return err
		}
		if r.Status != Pending && r.Status != Approved { // finished: it joins the history, in order
			if _, err := tx.Exec(`UPDATE requests SET done_seq = (SELECT coalesce(max(done_seq), 0) + 1 FROM requests)
				WHERE id = ? AND done_seq IS NULL`, id); err != nil {
				return err
			}
		}
	}
	return nil
}

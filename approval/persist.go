package approval

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/sluicehq/sluice/internal/privatefile"
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
	if err := privatefile.Prepare(abs); err != nil {
		return nil, fmt.Errorf("approval: %w", err)
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
	s.be = &sqliteBackend{db: db}
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

// A backend keeps the requests of a Store outside its process: SQLite in
// the data directory (OpenStore) or Redis (OpenRedisStore). Every Store
// operation is one transaction: begin reads every request, the writes go
// in put and remove, commit makes them visible to every other Store on the
// same backend at once.
type backend interface {
	begin() (backendTx, error)
	close() error
}

type backendTx interface {
	rows() ([]row, error)
	remove(id string) error
	// put writes a request; finished ones join the history (the order
	// in which they finished) if they are not in it yet.
	put(id, data string, linked, finished bool) error
	commit() error
	rollback()
}

// row is one request as a backend keeps it.
type row struct {
	id, data string
	linked   bool
	done     bool  // finished: in the history
	seq      int64 // its place in the history
}

// Close releases the backend of a Store from OpenStore or OpenRedisStore;
// for a memory Store it does nothing.
func (s *Store) Close() error {
	if s.be == nil {
		return nil
	}
	return s.be.close()
}

// lock takes s.mu and, for a persistent Store, begins a transaction and
// replaces the memory state with the backend's. On error s.mu is held all
// the same (unlock releases it) and the memory state is the last known.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.be == nil {
		return nil
	}
	if s.beErr != nil && time.Since(s.beFailed) < backendRetry {
		// The store just failed (Redis down or hung): the operations
		// queued behind the one that waited it out fail at once instead
		// of each waiting as long again, one after another.
		return fmt.Errorf("%w: it failed %v ago: %w", ErrUnavailable, time.Since(s.beFailed).Round(time.Millisecond), s.beErr)
	}
	tx, err := s.be.begin()
	if err != nil {
		s.beErr, s.beFailed = err, time.Now()
		return fmt.Errorf("%w: reading it: %w", ErrUnavailable, err)
	}
	if err := s.load(tx); err != nil {
		tx.rollback()
		s.beErr, s.beFailed = err, time.Now()
		return fmt.Errorf("%w: reading it: %w", ErrUnavailable, err)
	}
	s.beErr = nil
	s.tx = tx
	return nil
}

// backendRetry is how long after a failure of the approvals store its
// operations fail without asking it again.
const backendRetry = time.Second

func (s *Store) load(tx backendTx) error {
	rows, err := tx.rows()
	if err != nil {
		return err
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	byID, byCall, snap := map[string]*Request{}, map[string]*Request{}, map[string]string{}
	var done []string
	live := 0
	for _, rw := range rows {
		r := new(Request)
		if err := json.Unmarshal([]byte(rw.data), r); err != nil {
			return fmt.Errorf("request %s: %w", rw.id, err)
		}
		if string(r.Arguments) == "null" {
			r.Arguments = nil // a finished request's, as in memory
		}
		byID[r.ID] = r
		snap[r.ID] = rowKey(rw.data, rw.linked)
		if rw.linked {
			byCall[callKey(r.Agent, r.CallHash)] = r
		}
		if rw.done {
			done = append(done, r.ID)
		} else {
			live++
		}
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
// error is lock's or the write's: then nothing was written, and
// Options.OnUnavailable is told. The first write to succeed after such an
// error tells Options.OnAvailable: with the disk full, reading (and a
// transaction that writes nothing) still succeeds, and the store does not
// answer again until it takes what a call or a decision writes.
func (s *Store) unlock(lockErr error) (err error) {
	defer s.mu.Unlock()
	wrote := false
	defer func() {
		switch {
		case errors.Is(err, ErrUnavailable):
			s.failing = true
			if s.onUnavailable != nil {
				s.onUnavailable(err)
			}
		case err == nil && wrote && s.failing:
			s.failing = false
			if s.onAvailable != nil {
				s.onAvailable()
			}
		}
	}()
	if lockErr != nil || s.tx == nil {
		return lockErr
	}
	tx := s.tx
	s.tx = nil
	wrote, err = s.save(tx)
	if err != nil {
		tx.rollback()
		return fmt.Errorf("%w: writing it: %w", ErrUnavailable, err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("%w: writing it: %w", ErrUnavailable, err)
	}
	return nil
}

// save writes what changed since lock into tx; wrote says whether
// anything did.
func (s *Store) save(tx backendTx) (wrote bool, err error) {
	for id := range s.snap {
		if _, ok := s.byID[id]; !ok {
			if err := tx.remove(id); err != nil {
				return wrote, err
			}
			wrote = true
		}
	}
	for id, r := range s.byID {
		data, err := json.Marshal(r)
		if err != nil {
			return wrote, err
		}
		linked := s.byCall[callKey(r.Agent, r.CallHash)] == r
		old, had := s.snap[id]
		if had && old == rowKey(string(data), linked) {
			continue
		}
		if err := tx.put(id, string(data), linked, r.Status != Pending && r.Status != Approved); err != nil {
			return wrote, err
		}
		wrote = true
	}
	return wrote, nil
}

// sqliteBackend is OpenStore's.
type sqliteBackend struct{ db *sql.DB }

func (b *sqliteBackend) close() error { return b.db.Close() }

func (b *sqliteBackend) begin() (backendTx, error) {
	tx, err := b.db.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	return sqliteTx{tx}, nil
}

type sqliteTx struct{ tx *sql.Tx }

func (t sqliteTx) commit() error { return t.tx.Commit() }
func (t sqliteTx) rollback()     { _ = t.tx.Rollback() }

func (t sqliteTx) rows() ([]row, error) {
	rs, err := t.tx.Query(`SELECT id, data, linked, done_seq FROM requests`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var rw row
		var seq sql.NullInt64
		if err := rs.Scan(&rw.id, &rw.data, &rw.linked, &seq); err != nil {
			return nil, err
		}
		rw.done, rw.seq = seq.Valid, seq.Int64
		out = append(out, rw)
	}
	return out, rs.Err()
}

func (t sqliteTx) remove(id string) error {
	_, err := t.tx.Exec(`DELETE FROM requests WHERE id = ?`, id)
	return err
}

func (t sqliteTx) put(id, data string, linked, finished bool) error {
	if _, err := t.tx.Exec(`INSERT INTO requests (id, data, linked, done_seq) VALUES (?, ?, ?, NULL)
		ON CONFLICT (id) DO UPDATE SET data = excluded.data, linked = excluded.linked`, id, data, linked); err != nil {
		return err
	}
	if finished { // it joins the history, in order
		if _, err := t.tx.Exec(`UPDATE requests SET done_seq = (SELECT coalesce(max(done_seq), 0) + 1 FROM requests)
			WHERE id = ? AND done_seq IS NULL`, id); err != nil {
			return err
		}
	}
	return nil
}

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
	"sync"
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
	s.snap = map[string]snapRow{}
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
	// version names the backend's state as the transaction began: the
	// same version as at an earlier transaction means nobody else wrote
	// in between, so what memory holds since is the backend's state. ""
	// means it cannot say.
	version() (string, error)
	rows() ([]row, error)
	// changes returns the requests written since the backend was at
	// version since, and the ids of those removed, when it can tell
	// (ok); when it cannot, the caller reads every request.
	changes(since string) (rows []row, gone []string, ok bool, err error)
	remove(id string) error
	// put writes a request; finished ones join the history (the order
	// in which they finished) if they are not in it yet.
	put(id, data string, linked, finished bool) error
	// commit makes the writes visible. next is the backend's version
	// once they are, when the backend knows memory matches it (nobody
	// else wrote since version); "" keeps the version read at begin.
	commit() (next string, err error)
	rollback()
}

// row is one request as a backend keeps it.
type row struct {
	id, data string
	linked   bool
	done     bool  // finished: in the history
	seq      int64 // its place in the history
}

// Close releases the backend of a Store from OpenStore or OpenRedisStore,
// once an operation under way has ended, waiting for it at most
// closeWait; every operation after it fails. For a memory Store it does
// nothing. An operation is not cut off while it may still end: its
// transaction holds Redis's lock, which every replica's operations share,
// and a commit Close failed kept it taken for its lease, each operation
// of the others failing meanwhile (TestRedisStoreCloseMidOperation). One
// stalled on its backend (Redis not answering) is, so that a shutdown is
// not held up by it for the backend's own wait (TestServeRedisClientPause).
func (s *Store) Close() error {
	if s.be == nil || s.closed.Swap(true) {
		return nil
	}
	for deadline := time.Now().Add(closeWait); ; time.Sleep(5 * time.Millisecond) {
		if s.mu.TryLock() {
			defer s.mu.Unlock()
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return s.be.close()
}

// closeWait is how long Close waits for an operation under way.
const closeWait = time.Second

// errClosed is the error of an operation after Close.
var errClosed = errors.New("it is closed")

// lock takes s.mu and, for a persistent Store, begins a transaction and
// replaces the memory state with the backend's. On error s.mu is held all
// the same (unlock releases it) and the memory state is the last known.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.be == nil {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("%w: %w", ErrUnavailable, errClosed)
	}
	if s.beErr != nil && time.Since(s.beFailed) < backendRetry {
		// The store just failed (Redis down or hung): the operations
		// queued behind the one that waited it out fail at once instead
		// of each waiting as long again, one after another.
		return fmt.Errorf("%w: it failed %v ago: %w", ErrUnavailable, time.Since(s.beFailed).Round(time.Millisecond), s.beErr)
	}
	tx, err := s.be.begin()
	if err != nil {
		s.version = ""
		s.beErr, s.beFailed = err, time.Now()
		return fmt.Errorf("%w: reading it: %w", ErrUnavailable, err)
	}
	v, err := tx.version()
	if err == nil && (v == "" || v != s.version) {
		err = s.catchUp(tx)
	}
	if err != nil {
		tx.rollback()
		s.version = ""
		s.beErr, s.beFailed = err, time.Now()
		return fmt.Errorf("%w: reading it: %w", ErrUnavailable, err)
	}
	s.version = v
	s.beErr = nil
	s.tx = tx
	return nil
}

// backendRetry is how long after a failure of the approvals store its
// operations fail without asking it again.
const backendRetry = time.Second

// catchUp brings memory to the backend's state: the requests written
// since s.version when the backend can tell them, otherwise all of them.
func (s *Store) catchUp(tx backendTx) error {
	if s.version == "" {
		return s.load(tx)
	}
	rows, gone, ok, err := tx.changes(s.version)
	switch {
	case err != nil:
		return err
	case !ok:
		return s.load(tx)
	}
	return s.apply(rows, gone)
}

func (s *Store) load(tx backendTx) error {
	rows, err := tx.rows()
	if err != nil {
		return err
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	byID, byCall, snap := map[string]*Request{}, map[string]*Request{}, map[string]snapRow{}
	var done []string
	live := 0
	for _, rw := range rows {
		r, err := decodeRow(rw)
		if err != nil {
			return err
		}
		byID[r.ID] = r
		snap[r.ID] = snapRow{key: rowKey(rw.data, rw.linked), req: copyRequest(r)}
		if rw.linked {
			byCall[r.callKey()] = r
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

func decodeRow(rw row) (*Request, error) {
	r := new(Request)
	if err := json.Unmarshal([]byte(rw.data), r); err != nil {
		return nil, fmt.Errorf("request %s: %w", rw.id, err)
	}
	if string(r.Arguments) == "null" {
		r.Arguments = nil // a finished request's, as in memory
	}
	return r, nil
}

// apply brings memory up to the backend's state from what changed since
// it last matched: rows written, and ids removed. Nothing changes if a
// row cannot be decoded.
func (s *Store) apply(rows []row, gone []string) error {
	reqs := make([]*Request, len(rows))
	for i, rw := range rows {
		r, err := decodeRow(rw)
		if err != nil {
			return err
		}
		reqs[i] = r
	}
	inHistory := make(map[string]bool, len(s.done))
	for _, id := range s.done {
		inHistory[id] = true
	}
	leave := map[string]bool{} // ids to leave the history
	remove := func(id string) {
		old := s.byID[id]
		if old == nil {
			return
		}
		delete(s.byID, id)
		delete(s.snap, id)
		if key := old.callKey(); s.byCall[key] == old {
			delete(s.byCall, key)
		}
		if inHistory[id] {
			leave[id] = true
		} else {
			s.live--
		}
	}
	for _, id := range gone {
		remove(id)
	}
	var finished []row // rows new to the history
	for i, rw := range rows {
		remove(rw.id)
		r := reqs[i]
		s.byID[rw.id] = r
		s.snap[rw.id] = snapRow{key: rowKey(rw.data, rw.linked), req: copyRequest(r)}
		if rw.linked {
			s.byCall[r.callKey()] = r // a finished request's agent may be cut: linked by its hash, as load links it
		}
		switch {
		case !rw.done:
			s.live++
		case leave[rw.id]:
			delete(leave, rw.id) // in the history already, where it stays
		default:
			finished = append(finished, rw)
		}
	}
	if len(leave) > 0 {
		s.done = slices.DeleteFunc(s.done, func(id string) bool { return leave[id] })
	}
	slices.SortStableFunc(finished, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	for _, rw := range finished {
		s.done = append(s.done, rw.id)
	}
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
		case errors.Is(err, errClosed): // shut down, not failing
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
	var rows map[string]snapRow
	wrote, rows, err = s.save(tx)
	if err != nil {
		tx.rollback()
		s.version = "" // memory is ahead of the backend: read it again
		return fmt.Errorf("%w: writing it: %w", ErrUnavailable, err)
	}
	next, err := tx.commit()
	if err != nil {
		s.version = ""
		return fmt.Errorf("%w: writing it: %w", ErrUnavailable, err)
	}
	if next != "" {
		s.version = next
	}
	for id, rw := range rows {
		if rw.key == "" {
			delete(s.snap, id)
		} else {
			s.snap[id] = rw
		}
	}
	return nil
}

// snapRow is a request as the backend holds it: its row, and a copy of
// the request it was encoded from.
type snapRow struct {
	key string // rowKey
	req Request
}

// copyRequest is *r with what it shares that could change in place
// copied: not its arguments and extra, which are never written to.
func copyRequest(r *Request) Request {
	c := *r
	c.Asked = slices.Clone(r.Asked)
	return c
}

// sameRequest reports whether a and b encode alike, without encoding
// them: a request unchanged since it was written is not encoded again.
func sameRequest(a, b *Request) bool {
	return sameBytes(a.Arguments, b.Arguments) && sameBytes(a.Extra, b.Extra) && slices.Equal(a.Asked, b.Asked) &&
		a.ID == b.ID && a.TxnID == b.TxnID && a.Status == b.Status && a.Upstream == b.Upstream && a.Tool == b.Tool &&
		a.CallHash == b.CallHash && a.PolicyVersion == b.PolicyVersion && a.Agent == b.Agent && a.Session == b.Session &&
		a.AgentHash == b.AgentHash && a.Client == b.Client && a.Reason == b.Reason && a.RuleID == b.RuleID && a.Created == b.Created &&
		a.Expires == b.Expires && a.DecidedBy == b.DecidedBy && a.BaseHash == b.BaseHash
	// TestSameRequestEveryField fails when a field is left out.
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// marshalRequest encodes a request as its row holds it.
var marshalRequest = func(r *Request) ([]byte, error) { return json.Marshal(r) }

// save writes what changed since lock into tx; wrote says whether
// anything did, rows what the backend holds once tx commits (a key of ""
// for a row removed).
func (s *Store) save(tx backendTx) (wrote bool, rows map[string]snapRow, err error) {
	for id := range s.snap {
		if _, ok := s.byID[id]; !ok {
			if err := tx.remove(id); err != nil {
				return wrote, nil, err
			}
			wrote = true
			rows = setRow(rows, id, snapRow{})
		}
	}
	var joining []*Request // finished since the backend had them: they join its history
	put := func(id string, r *Request) error {
		linked := s.byCall[r.callKey()] == r
		old, had := s.snap[id]
		if had && old.key[0] == rowKey("", linked)[0] && sameRequest(&old.req, r) {
			return nil
		}
		data, err := marshalRequest(r)
		if err != nil {
			return err
		}
		key := rowKey(string(data), linked)
		if had && old.key == key {
			rows = setRow(rows, id, snapRow{key: key, req: copyRequest(r)}) // not to encode it again
			return nil
		}
		if err := tx.put(id, string(data), linked, isFinished(r)); err != nil {
			return err
		}
		wrote = true
		rows = setRow(rows, id, snapRow{key: key, req: copyRequest(r)})
		return nil
	}
	for id, r := range s.byID {
		if old, had := s.snap[id]; isFinished(r) && (!had || !isFinished(&old.req)) {
			joining = append(joining, r)
			continue
		}
		if err := put(id, r); err != nil {
			return wrote, nil, err
		}
	}
	if len(joining) > 1 {
		// In the order they finished (s.done), which the backend's
		// history takes from the order they are written: a store
		// following the backend's changes, or reading it whole, orders
		// its history as this one does, and drops the same oldest.
		at := make(map[string]int, len(s.done))
		for i, id := range s.done {
			at[id] = i
		}
		slices.SortFunc(joining, func(a, b *Request) int { return cmp.Compare(at[a.ID], at[b.ID]) })
	}
	for _, r := range joining {
		if err := put(r.ID, r); err != nil {
			return wrote, nil, err
		}
	}
	return wrote, rows, nil
}

// isFinished reports whether r has ended: it is in the history.
func isFinished(r *Request) bool { return r.Status != Pending && r.Status != Approved }

func setRow(rows map[string]snapRow, id string, rw snapRow) map[string]snapRow {
	if rows == nil {
		rows = map[string]snapRow{}
	}
	rows[id] = rw
	return rows
}

// sqliteBackend is OpenStore's. Its transactions go through one
// connection, held for good, so that SQLite's data_version, which
// changes when another connection commits, says whether another process
// wrote the file since the last transaction.
type sqliteBackend struct {
	db *sql.DB

	// mu guards the fields below: Close may come while an operation
	// (a waiting call's poll, the sweeper) begins a transaction.
	mu     sync.Mutex
	conn   *sql.Conn // nil until the first transaction, or after a failed one
	closed bool
	// epoch counts the connections taken: a data_version read on one is
	// not to be compared with one read on another.
	epoch int
}

func (b *sqliteBackend) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.conn != nil {
		b.conn.Close() // waits for a transaction on it to end
		b.conn = nil
	}
	return b.db.Close()
}

func (b *sqliteBackend) begin() (backendTx, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("the store is closed")
	}
	ctx := context.Background()
	if b.conn == nil {
		c, err := b.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		b.conn, b.epoch = c, b.epoch+1
	}
	tx, err := b.conn.BeginTx(ctx, nil)
	if err != nil {
		b.conn.Close()
		b.conn = nil
		return nil, err
	}
	return sqliteTx{tx, b.epoch}, nil
}

type sqliteTx struct {
	tx    *sql.Tx
	epoch int
}

// commit keeps the version read at begin: a connection's own commits
// leave data_version as it was.
func (t sqliteTx) commit() (string, error) { return "", t.tx.Commit() }
func (t sqliteTx) rollback()               { _ = t.tx.Rollback() }

// version is the connection's epoch and the file's data_version, read
// with the write lock held (transactions begin IMMEDIATE), so no commit
// of another connection comes between it and what the transaction reads.
func (t sqliteTx) version() (string, error) {
	var v int64
	if err := t.tx.QueryRow(`PRAGMA data_version`).Scan(&v); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", t.epoch, v), nil
}

// changes cannot say: SQLite keeps no record of what changed.
func (t sqliteTx) changes(string) ([]row, []string, bool, error) { return nil, nil, false, nil }

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

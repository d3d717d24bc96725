package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/sluicehq/sluice/telemetry"
)

// maxBlockBytes ends a block early when its events add up to this much,
// so a run of large events (kept arguments) does not make one huge row.
const maxBlockBytes = 4 << 20

// keyNames are the fields block_keys indexes, in pending.keys order.
var keyNames = [...]string{"agent", "session", "upstream", "tool", "decision", "type"}

// sessionKey is the session's index in keyNames.
const sessionKey = 1

// pending is an event encoded for its block by the caller, so that the
// writer does nothing but write.
type pending struct {
	line *[]byte // the event as JSON, without seq or newline; from linePool
	time int64   // Unix nanoseconds
	txn  string
	keys [len(keyNames)]string
}

// encode stamps e with the store's clock and a new id where they are
// missing, and encodes it; with r set, e is r's header and r encodes the
// attrs.
func (s *Store) encode(e telemetry.Event, r telemetry.Record) (pending, error) {
	return encode(e, r, s.now)
}

// encode is Store.encode with the clock now.
func encode(e telemetry.Event, r telemetry.Record, now func() time.Time) (pending, error) {
	if e.Type == "" {
		return pending{}, errors.New("audit: event has no type")
	}
	if e.Time.IsZero() {
		e.Time = now()
	}
	e.Time = e.Time.UTC()
	if e.ID == "" {
		e.ID = telemetry.NewEventID(e.Time)
	}
	e.Seq = 0 // the block's position gives it
	// A client's names (a tool's, MiBs long) are kept as a prefix and
	// the whole's length and SHA-256, so a few calls cannot fill what
	// the console reads.
	e.BoundNames()
	buf := linePool.Get().(*[]byte)
	var line []byte
	var err error
	if r != nil {
		line, err = telemetry.AppendRecordJSON((*buf)[:0], &e, r)
	} else {
		line, err = e.AppendJSON((*buf)[:0])
	}
	if err == nil && len(line) > 2*maxReadDepth && telemetry.Nesting(line) > maxReadDepth {
		// Stored, no query could read it, nor the events beside it.
		e.Attrs = map[string]any{AttrsDropped: fmt.Sprintf("the event's attrs nested deeper than the %d levels the store reads back", maxReadDepth)}
		line, err = e.AppendJSON((*buf)[:0])
	}
	if err != nil {
		linePool.Put(buf)
		return pending{}, fmt.Errorf("audit: encoding %s event: %w", e.Type, err)
	}
	*buf = line
	p := pending{
		line: buf, time: e.Time.UnixNano(), txn: e.TxnID,
		keys: [...]string{e.Agent, e.Session, e.Upstream, e.Tool, e.Decision, e.Type},
	}
	// The keys as the line holds them, invalid UTF-8 replaced, so that a
	// query finds in block_keys what it then matches in the line. The
	// encoder writes each invalid byte as \ufffd: a line without one had
	// nothing to replace, and its keys need no second look (seven scans
	// of each event of every call).
	if bytes.Contains(line, replacement) {
		p.txn = telemetry.ValidUTF8(p.txn)
		for i, k := range p.keys {
			p.keys[i] = telemetry.ValidUTF8(k)
		}
	}
	return p, nil
}

// maxReadDepth is how deeply a stored event may nest: encoding/json,
// which reads it back, stops at 10000 levels.
const maxReadDepth = 10_000

// AttrsDropped is the attr that stands, with the reason, for the attrs of
// an event that nested deeper than the store reads back (an agent's
// arguments kept as it nested them, say): the event is stored with its
// header, not turned away, and the events beside it stay readable.
const AttrsDropped = "attrs_dropped"

// replacement is how the encoder writes a byte that is not valid UTF-8.
var replacement = []byte(`\ufffd`)

// linePool holds the buffers events are encoded into, given back by the
// writer once it has copied them into a block.
var linePool = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

func (p *pending) size() int {
	if p.line == nil {
		return 0
	}
	return len(*p.line)
}

// release gives p's buffer back to linePool; p must not be used after.
func (p *pending) release() {
	if p.line != nil && cap(*p.line) <= 64<<10 { // let the odd huge event go
		linePool.Put(p.line)
	}
	p.line = nil
}

// scratch is memory the writer reuses from one block to the next.
type scratch struct {
	lines, data []byte
	keys        map[fieldValue]struct{}
}

// fieldValue is a value of the keyNames field at index field.
type fieldValue struct {
	field int
	value string
}

// block is one batch of events as it is stored.
type block struct {
	first, last      int64
	minTime, maxTime int64
	bloom            []byte
	data             []byte // JSON Lines, s2-compressed
	n                int    // events
	keys             []string
}

// newBlock builds the block of evs, in memory from sc (nil for none)
// that is valid until sc's next use.
func newBlock(evs []*pending, sc *scratch) block {
	if sc == nil {
		sc = &scratch{}
	}
	if sc.keys == nil {
		sc.keys = make(map[fieldValue]struct{})
	}
	b := block{minTime: evs[0].time, maxTime: evs[0].time, n: len(evs)}
	lines := sc.lines[:0]
	txns := make([]string, 0, len(evs))
	keys := sc.keys
	clear(keys)
	var prev [2]*pending // the two events before p: a call's two events alternate
	for _, p := range evs {
		lines = append(append(lines, *p.line...), '\n')
		b.minTime, b.maxTime = min(b.minTime, p.time), max(b.maxTime, p.time)
		if p.txn != "" && (len(txns) == 0 || txns[len(txns)-1] != p.txn) {
			txns = append(txns, p.txn)
		}
		for i, v := range p.keys {
			// Most keys repeat those of the events just before: skip
			// hashing them again.
			if v != "" && (prev[0] == nil || prev[0].keys[i] != v) && (prev[1] == nil || prev[1].keys[i] != v) {
				keys[fieldValue{i, v}] = struct{}{}
			}
		}
		prev[1], prev[0] = prev[0], p
	}
	sc.lines = lines
	sc.data = s2.Encode(sc.data[:cap(sc.data)], lines)
	b.data = sc.data
	b.keys = make([]string, 0, len(keys))
	for k := range keys {
		b.keys = append(b.keys, blockKey(keyNames[k.field], k.value))
	}
	slices.Sort(b.keys)
	if len(txns) > 0 {
		b.bloom = newBloom(txns)
	}
	return b
}

func blockKey(name, value string) string { return name + "=" + value }

// writeBlock stores b as the block after the newest one, in one
// transaction, setting b.first and b.last. If prev is the first seq a
// previous attempt at the same block used and that attempt committed after
// all, it does nothing.
//
// It runs BEGIN and COMMIT itself on the writer's connection rather than
// through database/sql's Tx, so that its statements stay prepared from
// one block to the next (a Tx prepares a connection's statements again).
func (s *Store) writeBlock(b *block, prev int64) (err error) {
	ctx := context.Background()
	exec := func(q string, args ...any) error { return s.exec(ctx, q, args...) }
	queryRow := func(q string, args ...any) *sql.Row { return s.queryRow(ctx, q, args...) }
	if err := exec("BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("audit: beginning transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = exec("ROLLBACK") // fails harmlessly if SQLite already rolled back
		}
	}()
	if prev > 0 {
		var stored []byte
		switch err := queryRow("SELECT events FROM block_data WHERE first_seq = ?", prev).Scan(&stored); {
		case err == nil && bytes.Equal(stored, b.data):
			b.first = prev
			return exec("ROLLBACK")
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("audit: checking an earlier attempt: %w", err)
		}
	}
	var last int64
	if err := queryRow("SELECT last_seq FROM blocks ORDER BY first_seq DESC LIMIT 1").Scan(&last); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("audit: reading the last seq: %w", err)
	}
	b.first = last + 1
	b.last = b.first + int64(b.n) - 1
	if err := insertBlock(b, exec); err != nil {
		return err
	}
	if err := exec("COMMIT"); err != nil {
		return fmt.Errorf("audit: committing: %w", err)
	}
	return nil
}

// pruneBlocksPerTx bounds how many blocks one pruning transaction deletes,
// so that it holds the write lock briefly.
const pruneBlocksPerTx = 500

// prune deletes the blocks older than the retention, a few hundred per
// transaction, and reports what it did to onPrune. Only the writer calls
// it.
func (s *Store) prune() {
	ctx := context.Background()
	cutoff := s.now().Add(-s.retention).UnixNano()
	var total int64
	var err error
	for {
		var n int64
		// Watched as a write is: a database locked by another process
		// holds BEGIN IMMEDIATE for the busy timeout, a stalled disk for
		// ever, and the events queued meanwhile wait.
		stop := s.watch()
		n, err = s.pruneSome(ctx, cutoff)
		stop()
		if err == nil {
			// A commit: writes go through (a stall it caused is over,
			// with no event needed to say so).
			s.report(nil)
		}
		if err != nil || n == 0 {
			break
		}
		total += n
	}
	if s.onPrune != nil && (total > 0 || err != nil) {
		s.onPrune(total, err)
	}
}

// pruneSome deletes up to pruneBlocksPerTx blocks whose events all
// happened before cutoff, never the newest block, and returns how many
// events they held.
func (s *Store) pruneSome(ctx context.Context, cutoff int64) (n int64, err error) {
	exec := func(q string, args ...any) error { return s.exec(ctx, q, args...) }
	if err := exec("BEGIN IMMEDIATE"); err != nil {
		return 0, fmt.Errorf("audit: pruning: %w", err)
	}
	defer func() {
		if err != nil {
			_ = exec("ROLLBACK")
		}
	}()
	st, err := s.prepared(ctx, `SELECT first_seq, last_seq, keys FROM blocks
		WHERE max_time < ? AND first_seq < (SELECT max(first_seq) FROM blocks) ORDER BY first_seq LIMIT `+fmt.Sprint(pruneBlocksPerTx))
	if err != nil {
		return 0, err
	}
	type old struct {
		first, last int64
		keys        string
	}
	var olds []old
	rows, err := st.QueryContext(ctx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("audit: pruning: %w", err)
	}
	for rows.Next() {
		var o old
		if err := rows.Scan(&o.first, &o.last, &o.keys); err != nil {
			rows.Close()
			return 0, fmt.Errorf("audit: pruning: %w", err)
		}
		olds = append(olds, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("audit: pruning: %w", err)
	}
	for _, o := range olds {
		var keys []string
		if err := json.Unmarshal([]byte(o.keys), &keys); err != nil {
			return 0, fmt.Errorf("audit: pruning block %d: keys: %w", o.first, err)
		}
		for _, k := range keys {
			if err := exec("DELETE FROM block_keys WHERE key = ? AND first_seq = ?", k, o.first); err != nil {
				return 0, fmt.Errorf("audit: pruning: %w", err)
			}
		}
		for _, q := range []string{"DELETE FROM block_data WHERE first_seq = ?", "DELETE FROM blocks WHERE first_seq = ?"} {
			if err := exec(q, o.first); err != nil {
				return 0, fmt.Errorf("audit: pruning: %w", err)
			}
		}
		n += o.last - o.first + 1
	}
	if err := exec("COMMIT"); err != nil {
		return 0, fmt.Errorf("audit: pruning: %w", err)
	}
	return n, nil
}

// keysJSON is the blocks.keys column: keys as a JSON array.
func keysJSON(keys []string) string {
	b := []byte{'['}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = telemetry.AppendJSONString(b, k)
	}
	return string(append(b, ']'))
}

// keysPerInsert is how many block_keys rows one INSERT adds.
const keysPerInsert = 64

// insertBlock adds the rows of b with exec, which runs a statement in the
// transaction.
func insertBlock(b *block, exec func(q string, args ...any) error) error {
	if err := exec("INSERT INTO blocks (first_seq, last_seq, min_time, max_time, txn_bloom, keys) VALUES (?,?,?,?,?,?)",
		b.first, b.last, b.minTime, b.maxTime, b.bloom, keysJSON(b.keys)); err != nil {
		return fmt.Errorf("audit: inserting events: %w", err)
	}
	if err := exec("INSERT INTO block_data (first_seq, events) VALUES (?,?)", b.first, b.data); err != nil {
		return fmt.Errorf("audit: inserting events: %w", err)
	}
	args := make([]any, 0, 2*keysPerInsert)
	for keys := b.keys; len(keys) > 0; {
		chunk := keys[:min(len(keys), keysPerInsert)]
		keys = keys[len(chunk):]
		args = args[:0]
		for _, k := range chunk {
			args = append(args, k, b.first)
		}
		if err := exec(keysSQL(len(chunk)), args...); err != nil {
			return fmt.Errorf("audit: indexing events: %w", err)
		}
	}
	return nil
}

// keysSQL is the INSERT of n block_keys rows.
func keysSQL(n int) string {
	var q strings.Builder
	q.WriteString("INSERT INTO block_keys (key, first_seq) VALUES (?,?)")
	for range n - 1 {
		q.WriteString(",(?,?)")
	}
	return q.String()
}

// prepared returns the writer's statement q, preparing it on first use;
// only the writer calls it.
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("audit: preparing %q: %w", q, err)
	}
	if s.stmts == nil {
		s.stmts = make(map[string]*sql.Stmt)
	}
	s.stmts[q] = st
	return st, nil
}

// exec runs the writer's statement q; only the writer calls it.
func (s *Store) exec(ctx context.Context, q string, args ...any) error {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// queryRow runs the writer's query q; only the writer calls it.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return s.wconn.QueryRowContext(ctx, q, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// A Bloom filter of a block's txn ids: 16 bits per id and 4 probes, so
// about one block in 400 without the id is read in vain by a txn query.
const (
	bloomBitsPerID = 16
	bloomProbes    = 4
)

func newBloom(ids []string) []byte {
	n := max(64, bloomBitsPerID*len(ids))
	f := make([]byte, (n+7)/8)
	for _, id := range ids {
		h1, h2 := bloomHash(id)
		for i := range uint32(bloomProbes) {
			bit := (h1 + i*h2) % uint32(len(f)*8)
			f[bit/8] |= 1 << (bit % 8)
		}
	}
	return f
}

// bloomHas reports whether id may be in the filter f; an empty f holds
// nothing.
func bloomHas(f []byte, id string) bool {
	if len(f) == 0 {
		return false
	}
	h1, h2 := bloomHash(id)
	for i := range uint32(bloomProbes) {
		bit := (h1 + i*h2) % uint32(len(f)*8)
		if f[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
	}
	return true
}

// bloomHash is FNV-1a (64-bit) of id, split in two: stored filters were
// made with it. Written out rather than through hash/fnv, whose hasher
// and []byte(id) cost two allocations for each id of each block.
func bloomHash(id string) (uint32, uint32) {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	s := uint64(offset64)
	for i := 0; i < len(id); i++ {
		s ^= uint64(id[i])
		s *= prime64
	}
	return uint32(s), uint32(s>>32) | 1
}

// storedEvent is an event as a block holds it, with the attrs left
// undecoded until the event is known to match.
type storedEvent struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Time     time.Time       `json:"time"`
	TxnID    string          `json:"txn_id"`
	Agent    string          `json:"agent"`
	Session  string          `json:"session"`
	Upstream string          `json:"upstream"`
	Tool     string          `json:"tool"`
	Decision string          `json:"decision"`
	Reason   string          `json:"reason"`
	Attrs    json.RawMessage `json:"attrs"`
}

func (e *storedEvent) event(seq int64) (telemetry.Event, error) {
	out := telemetry.Event{
		ID: e.ID, Seq: seq, Type: e.Type, Time: e.Time, TxnID: e.TxnID, Agent: e.Agent, Session: e.Session,
		Upstream: e.Upstream, Tool: e.Tool, Decision: e.Decision, Reason: e.Reason,
	}
	if len(e.Attrs) > 0 && !bytes.Equal(e.Attrs, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(e.Attrs))
		dec.UseNumber() // exact, like the arguments replay needs
		if err := dec.Decode(&out.Attrs); err != nil {
			return out, fmt.Errorf("audit: event %d (%s): attrs: %w", seq, e.ID, err)
		}
	}
	return out, nil
}

// blockLines decompresses a block's events: one JSON line each.
func blockLines(first int64, compressed []byte) ([][]byte, error) {
	data, err := s2.Decode(nil, compressed)
	if err != nil {
		return nil, fmt.Errorf("audit: events from %d: %w", first, err)
	}
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'}))
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		lines = append(lines, line)
		data = rest
	}
	return lines, nil
}

// migrateRows moves the events of a schema-1 database (one row each) into
// blocks, keeping their seq, and drops the old table.
func migrateRows(ctx context.Context, tx *sql.Tx) error {
	const page = 1000
	var after int64
	for {
		rows, err := tx.QueryContext(ctx, `SELECT seq, id, type, time, txn_id, agent, session, upstream, tool, decision, reason, attrs
			FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, after, page)
		if err != nil {
			return err
		}
		var seqs []int64
		var evs []*pending
		for rows.Next() {
			var e telemetry.Event
			var ns int64
			var attrs []byte
			if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &ns, &e.TxnID, &e.Agent, &e.Session, &e.Upstream, &e.Tool, &e.Decision, &e.Reason, &attrs); err != nil {
				rows.Close()
				return err
			}
			e.Time = time.Unix(0, ns)
			if len(attrs) > 0 {
				dec := json.NewDecoder(bytes.NewReader(attrs))
				dec.UseNumber()
				if err := dec.Decode(&e.Attrs); err != nil {
					rows.Close()
					return fmt.Errorf("event %d: attrs: %w", e.Seq, err)
				}
			}
			p, err := encode(e, nil, time.Now)
			if err != nil {
				rows.Close()
				return fmt.Errorf("event %d: %w", e.Seq, err)
			}
			seqs = append(seqs, e.Seq)
			evs = append(evs, &p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// One block per run of consecutive seqs.
		for start := 0; start < len(evs); {
			end := start + 1
			for end < len(evs) && seqs[end] == seqs[end-1]+1 {
				end++
			}
			b := newBlock(evs[start:end], nil)
			b.first, b.last = seqs[start], seqs[end-1]
			exec := func(q string, args ...any) error {
				_, err := tx.ExecContext(ctx, q, args...)
				return err
			}
			if err := insertBlock(&b, exec); err != nil {
				return err
			}
			start = end
		}
		if len(evs) < page {
			break
		}
		after = seqs[len(seqs)-1]
	}
	_, err := tx.ExecContext(ctx, "DROP TABLE events")
	return err
}

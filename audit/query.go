package audit

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/invisible"
	"github.com/sluicehq/sluice/telemetry"
)

// Filter selects events. Zero fields match everything; set fields must
// all match, exactly.
type Filter struct {
	Agent    string
	Session  string
	Upstream string
	Tool     string
	Decision string
	Type     string
	TxnID    string
	// Since and Until bound the event time: Since <= time < Until. Zero
	// means unbounded.
	Since, Until time.Time
	// AfterSeq keeps events appended after the one with this seq, for
	// paging and resuming.
	AfterSeq int64
	// Limit caps the number of events: Query and Scan return the first
	// Limit in append order, Tail starts with the last Limit. Zero means
	// no limit.
	Limit int
	// MaxBytes caps what Query, Latest and Scan read by the events' stored
	// size: they stop after the event that brings the total to it. What
	// an event holds is largely the agent's to choose (a tool name or
	// arguments as long as a request body), so a page that holds the
	// newest events says how many bytes, not only how many. Zero means no
	// cap.
	MaxBytes int

	// sessionID, set by ForSession, is a session id whose events may
	// also be recorded under it rather than Session, its reference.
	sessionID string
}

// ForSession sets f to select the events of session s, a session id or
// its reference (telemetry.SessionRef). The gateway records a session by
// its reference, the id being a credential for it: given an id, f
// selects the events recorded with its reference and, recorded before
// the gateway recorded references, with the id itself.
func (f *Filter) ForSession(s string) {
	f.Session, f.sessionID = telemetry.SessionRef(s), ""
	if f.Session != s {
		f.sessionID = s
	}
}

// blockWhere is the condition on blocks that may hold events f selects,
// past the cursor: first_seq cmp cursor, where cmp is > or <. The cursor
// goes into each block_keys lookup too, so that a page costs the same
// however many blocks came before it.
func (f Filter) blockWhere(cmp string, cursor int64) (string, []any) {
	conds := []string{"first_seq " + cmp + " ?"}
	args := []any{cursor}
	for i, v := range f.keys() {
		switch {
		case v == "":
		case i == sessionKey && f.sessionID != "":
			conds = append(conds, "first_seq IN (SELECT first_seq FROM block_keys WHERE key IN (?, ?) AND first_seq "+cmp+" ?)")
			args = append(args, blockKey(keyNames[i], v), blockKey(keyNames[i], f.sessionID), cursor)
		default:
			conds = append(conds, "first_seq IN (SELECT first_seq FROM block_keys WHERE key = ? AND first_seq "+cmp+" ?)")
			args = append(args, blockKey(keyNames[i], v), cursor)
		}
	}
	if !f.Since.IsZero() {
		conds = append(conds, "max_time >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		conds = append(conds, "min_time < ?")
		args = append(args, f.Until.UnixNano())
	}
	if f.AfterSeq > 0 {
		conds = append(conds, "last_seq > ?")
		args = append(args, f.AfterSeq)
	}
	return strings.Join(conds, " AND "), args
}

// stored returns f with its values as stored events hold them (invalid
// UTF-8 replaced), so that they match what was appended.
func (f Filter) stored() Filter {
	for _, v := range []*string{&f.Agent, &f.Session, &f.Upstream, &f.Tool, &f.Decision, &f.Type, &f.TxnID, &f.sessionID} {
		*v = telemetry.ValidUTF8(*v)
	}
	return f
}

// keys are f's values of the fields block_keys indexes, in keyNames order.
func (f Filter) keys() [len(keyNames)]string {
	return [...]string{f.Agent, f.Session, f.Upstream, f.Tool, f.Decision, f.Type}
}

// match reports whether the event at seq is one f selects.
func (f Filter) match(seq int64, e *storedEvent) bool {
	if seq <= f.AfterSeq {
		return false
	}
	k := f.keys()
	have := [...]string{e.Agent, e.Session, e.Upstream, e.Tool, e.Decision, e.Type}
	for i := range k {
		if k[i] != "" && k[i] != have[i] && (i != sessionKey || f.sessionID == "" || f.sessionID != have[i]) {
			return false
		}
	}
	if f.TxnID != "" && f.TxnID != e.TxnID {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.Time.Before(f.Until) {
		return false
	}
	return true
}

// Query returns the events f selects, in append order.
func (s *Store) Query(ctx context.Context, f Filter) ([]telemetry.Event, error) {
	var out []telemetry.Event
	err := s.Scan(ctx, f, func(e telemetry.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Latest returns the newest f.Limit events f selects (all if Limit is
// zero), newest first: what a page of recent events shows.
func (s *Store) Latest(ctx context.Context, f Filter) ([]telemetry.Event, error) {
	var out []telemetry.Event
	err := s.scan(ctx, f, true, func(e telemetry.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Scan calls fn for each event f selects, in append order, without
// holding them all in memory; an error from fn stops it and is returned.
func (s *Store) Scan(ctx context.Context, f Filter, fn func(telemetry.Event) error) error {
	return s.scan(ctx, f, false, fn)
}

// errStop ends a scan that has what it needs.
var errStop = errors.New("stop")

// scan calls fn for the first f.Limit events f selects (all if Limit is
// zero), in append order, or with desc in reverse append order.
func (s *Store) scan(ctx context.Context, f Filter, desc bool, fn func(telemetry.Event) error) error {
	f = f.stored()
	n, size := 0, 0
	need := f.needles()
	err := s.scanBlocks(ctx, f, desc, func(first int64, data []byte) error {
		lines, err := blockLines(first, data)
		if err != nil {
			return err
		}
		for j := range lines {
			i := j
			if desc {
				i = len(lines) - 1 - j
			}
			seq := first + int64(i)
			if seq <= f.AfterSeq || !containsAll(lines[i], need) {
				continue
			}
			var se storedEvent
			if err := json.Unmarshal(lines[i], &se); err != nil {
				return fmt.Errorf("audit: event %d: %w", seq, err)
			}
			if !f.match(seq, &se) {
				continue
			}
			e, err := se.event(seq)
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return err
			}
			if n++; f.Limit > 0 && n >= f.Limit {
				return errStop
			}
			if size += len(lines[i]); f.MaxBytes > 0 && size >= f.MaxBytes {
				return errStop
			}
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// needles are byte strings every stored line of an event f selects
// contains: its field filters as the store encodes them ("agent":"alice").
// Lines without one are passed over without being decoded; lines with all
// of them are decoded and matched exactly.
func (f Filter) needles() [][]byte {
	var out [][]byte
	add := func(name, v string) {
		// U+FFFD is written as itself, and in place of invalid UTF-8 as
		// \ufffd: no one needle finds both.
		if v != "" && !strings.ContainsRune(v, utf8.RuneError) {
			b := append([]byte{'"'}, name...)
			b = append(b, '"', ':')
			out = append(out, telemetry.AppendJSONString(b, v))
		}
	}
	for i, v := range f.keys() {
		if i == sessionKey && f.sessionID != "" {
			continue // either of two: match decides
		}
		add(keyNames[i], v)
	}
	add("txn_id", f.TxnID)
	return out
}

func containsAll(line []byte, needles [][]byte) bool {
	for _, n := range needles {
		if !bytes.Contains(line, n) {
			return false
		}
	}
	return true
}

// blocksPerPage is how many blocks a scan lists at a time. Listing a page
// and closing the query before reading the events keeps no read
// transaction open while the caller's fn runs.
const blocksPerPage = 64

// scanBlocks calls fn with the events of each block that may hold events
// f selects, in order of their seq.
func (s *Store) scanBlocks(ctx context.Context, f Filter, desc bool, fn func(first int64, data []byte) error) error {
	cmp, order := ">", " ORDER BY first_seq LIMIT "
	var cursor int64
	if desc {
		cmp, order = "<", " ORDER BY first_seq DESC LIMIT "
		cursor = math.MaxInt64
	} else if f.AfterSeq > 0 {
		// Start at the block holding AfterSeq+1: a range of the primary
		// key, so that Tail's polling does not look at every block.
		var start int64
		err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(first_seq), 0) FROM blocks WHERE first_seq <= ?", f.AfterSeq+1).Scan(&start)
		if err != nil {
			return fmt.Errorf("audit: query: %w", err)
		}
		cursor = max(start-1, 0)
	}
	type ref struct {
		first int64
		bloom []byte
	}
	for {
		where, args := f.blockWhere(cmp, cursor)
		rows, err := s.db.QueryContext(ctx, "SELECT first_seq, txn_bloom FROM blocks WHERE "+where+order+fmt.Sprint(blocksPerPage), args...)
		if err != nil {
			return fmt.Errorf("audit: query: %w", err)
		}
		var page []ref
		for rows.Next() {
			var r ref
			if err := rows.Scan(&r.first, &r.bloom); err != nil {
				rows.Close()
				return fmt.Errorf("audit: query: %w", err)
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("audit: query: %w", err)
		}
		for _, r := range page {
			cursor = r.first
			if f.TxnID != "" && !bloomHas(r.bloom, f.TxnID) {
				continue
			}
			var data []byte
			switch err := s.db.QueryRowContext(ctx, "SELECT events FROM block_data WHERE first_seq = ?", r.first).Scan(&data); {
			case errors.Is(err, sql.ErrNoRows):
				continue // pruned since it was listed
			case err != nil:
				return fmt.Errorf("audit: reading events from %d: %w", r.first, err)
			}
			if err := fn(r.first, data); err != nil {
				return err
			}
		}
		if len(page) < blocksPerPage {
			return nil
		}
	}
}

// LastSeq returns the seq of the newest event, 0 if there is none. Tail
// with AfterSeq set to it follows only events appended from now on.
func (s *Store) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, "SELECT last_seq FROM blocks ORDER BY first_seq DESC LIMIT 1").Scan(&seq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return seq, nil
}

// Tail calls fn for the events f selects, first the existing ones (the
// last f.Limit of them, or all if Limit is zero) and then each new one as
// it is appended, in append order, until ctx ends (returning nil) or fn
// returns an error (returning it). Events appended through this Store are
// seen at once; those written by another process within
// Options.PollInterval.
func (s *Store) Tail(ctx context.Context, f Filter, fn func(telemetry.Event) error) error {
	last := f.AfterSeq
	emit := func(e telemetry.Event) error {
		last = e.Seq
		return fn(e)
	}
	// Subscribe before the first read so nothing committed in between is
	// missed.
	wake := s.changed()
	if f.Limit > 0 {
		var newest []telemetry.Event
		err := s.scan(ctx, f, true, func(e telemetry.Event) error {
			newest = append(newest, e)
			return nil
		})
		if err != nil {
			return tailErr(ctx, err)
		}
		slices.Reverse(newest)
		for _, e := range newest {
			if err := emit(e); err != nil {
				return err
			}
		}
	} else if err := s.tailFrom(ctx, f, last, emit); err != nil {
		return tailErr(ctx, err)
	}
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			wake = s.changed()
		case <-ticker.C:
		}
		if err := s.tailFrom(ctx, f, last, emit); err != nil {
			return tailErr(ctx, err)
		}
	}
}

// tailFrom emits the events after seq that f selects, a page at a time.
func (s *Store) tailFrom(ctx context.Context, f Filter, seq int64, emit func(telemetry.Event) error) error {
	f.Limit = 1000
	for {
		f.AfterSeq = seq
		n := 0
		err := s.Scan(ctx, f, func(e telemetry.Event) error {
			n++
			seq = e.Seq
			return emit(e)
		})
		if err != nil || n < f.Limit {
			return err
		}
	}
}

// tailErr turns an error caused by ctx ending into Tail's normal return.
func tailErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Export writes the events f selects to w as JSON Lines, one
// [telemetry.Event] per line, in append order. Characters a terminal
// would not show as themselves are written as \u escapes (see
// invisible.AppendJSON).
func (s *Store) Export(ctx context.Context, w io.Writer, f Filter) error {
	bw := bufio.NewWriter(w)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var line []byte
	err := s.Scan(ctx, f, func(e telemetry.Event) error {
		buf.Reset()
		if err := enc.Encode(e); err != nil {
			return err
		}
		line = invisible.AppendJSON(line[:0], buf.Bytes())
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// ReadJSONL decodes events exported by [Store.Export] from r, calling fn
// for each, for replay from a file instead of a database.
func ReadJSONL(r io.Reader, fn func(telemetry.Event) error) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for line := 1; ; line++ {
		var e telemetry.Event
		if err := dec.Decode(&e); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("audit: event %d: %w", line, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

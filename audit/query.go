package audit

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

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
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, col+" = ?")
			args = append(args, v)
		}
	}
	eq("agent", f.Agent)
	eq("session", f.Session)
	eq("upstream", f.Upstream)
	eq("tool", f.Tool)
	eq("decision", f.Decision)
	eq("type", f.Type)
	eq("txn_id", f.TxnID)
	if !f.Since.IsZero() {
		conds = append(conds, "time >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		conds = append(conds, "time < ?")
		args = append(args, f.Until.UnixNano())
	}
	if f.AfterSeq > 0 {
		conds = append(conds, "seq > ?")
		args = append(args, f.AfterSeq)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

const selectSQL = `SELECT seq, id, type, time, txn_id, agent, session, upstream, tool, decision, reason, attrs FROM events`

// Query returns the events f selects, in append order.
func (s *Store) Query(ctx context.Context, f Filter) ([]telemetry.Event, error) {
	var out []telemetry.Event
	err := s.Scan(ctx, f, func(e telemetry.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Scan calls fn for each event f selects, in append order, without
// holding them all in memory; an error from fn stops it and is returned.
func (s *Store) Scan(ctx context.Context, f Filter, fn func(telemetry.Event) error) error {
	where, args := f.where()
	q := selectSQL + where + " ORDER BY seq"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return s.scan(ctx, q, args, fn)
}

func (s *Store) scan(ctx context.Context, q string, args []any, fn func(telemetry.Event) error) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("audit: query: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit: query: %w", err)
	}
	return nil
}

func scanEvent(rows *sql.Rows) (telemetry.Event, error) {
	var e telemetry.Event
	var ns int64
	var attrs []byte
	if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &ns, &e.TxnID, &e.Agent, &e.Session, &e.Upstream, &e.Tool, &e.Decision, &e.Reason, &attrs); err != nil {
		return e, fmt.Errorf("audit: reading event: %w", err)
	}
	e.Time = time.Unix(0, ns).UTC()
	if len(attrs) > 0 {
		dec := json.NewDecoder(bytes.NewReader(attrs))
		dec.UseNumber() // exact, like the arguments replay needs
		if err := dec.Decode(&e.Attrs); err != nil {
			return e, fmt.Errorf("audit: event %s: attrs: %w", e.ID, err)
		}
	}
	return e, nil
}

// LastSeq returns the seq of the newest event, 0 if there is none. Tail
// with AfterSeq set to it follows only events appended from now on.
func (s *Store) LastSeq(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq); err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return seq.Int64, nil
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
	where, args := f.where()
	if f.Limit > 0 {
		var newest []telemetry.Event
		err := s.scan(ctx, selectSQL+where+fmt.Sprintf(" ORDER BY seq DESC LIMIT %d", f.Limit), args, func(e telemetry.Event) error {
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
// [telemetry.Event] per line, in append order.
func (s *Store) Export(ctx context.Context, w io.Writer, f Filter) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := s.Scan(ctx, f, func(e telemetry.Event) error { return enc.Encode(e) }); err != nil {
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

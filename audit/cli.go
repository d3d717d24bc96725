package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/internal/invisible"
	"github.com/sluicehq/sluice/telemetry"
)

// DefaultDBPath is where `sluice events` looks for the database when
// --db is not given: FileName in the default data directory.
var DefaultDBPath = filepath.Join("sluice-data", FileName)

const eventsUsage = `usage:
  sluice events query  [filters] [--limit N] [--json]   print matching events, oldest first (--limit: the first N)
  sluice events tail   [filters] [--limit N] [--json]   print the last N (default 10), then follow
  sluice events export [filters] [--limit N]            write matching events as JSON Lines
  --limit 0: no limit; a negative one is refused
the store: --config sluice.yaml (its data_dir's events.db) or --db PATH; neither: the default data_dir's
filters:
  --agent A  --session S (the session's id, or its sha256:… reference)  --upstream U  --tool T  --decision D  --type T  --txn ID
  --since T  --until T  (RFC 3339, YYYY-MM-DD, or a duration such as 1h or 7d meaning that long ago)
`

// RunEventsCLI runs `sluice events <command> [flags]`, writing to stdout.
// args start with the command (tail, query or export). The database is
// opened read-only, so it may run while a gateway writes to it. tail runs
// until ctx ends.
func RunEventsCLI(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("events: missing command\n%s", eventsUsage)
	}
	cmd := args[0]
	switch cmd {
	case "query", "tail", "export":
	case "-h", "--help", "help":
		_, err := io.WriteString(stdout, eventsUsage)
		return err
	default:
		return fmt.Errorf("events: unknown command %q\n%s", cmd, eventsUsage)
	}

	fs := flag.NewFlagSet("events "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	db := fs.String("db", DefaultDBPath, "event database")
	var f Filter
	fs.StringVar(&f.Agent, "agent", "", "only events of this agent")
	session := fs.String("session", "", "only events of this session (its id or its reference, as recorded)")
	fs.StringVar(&f.Upstream, "upstream", "", "only events about this upstream")
	fs.StringVar(&f.Tool, "tool", "", "only events about this tool")
	fs.StringVar(&f.Decision, "decision", "", "only events with this decision (allow, deny, require_approval)")
	fs.StringVar(&f.Type, "type", "", "only events of this type, e.g. policy_enforced (as printed) or sluice.policy_enforced")
	fs.StringVar(&f.TxnID, "txn", "", "only events of this transaction")
	since := fs.String("since", "", "only events at or after this time")
	until := fs.String("until", "", "only events before this time")
	limit := fs.Int("limit", 0, "at most this many events, the oldest (tail: how many of the newest to show first); 0: no limit")
	asJSON := fs.Bool("json", false, "print JSON Lines")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err := io.WriteString(stdout, eventsUsage)
			return err
		}
		return fmt.Errorf("events %s: %w\n%s", cmd, err, eventsUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("events %s: unexpected argument %q\n%s", cmd, fs.Arg(0), eventsUsage)
	}
	if *session != "" {
		f.ForSession(*session)
	}
	// A decision is one of three verdicts: another word (held, approved,
	// denied) matched nothing and printed nothing, as if no call had been.
	switch f.Decision {
	case "", "allow", "deny", "require_approval":
	default:
		return fmt.Errorf("events %s: --decision %q: want allow, deny or require_approval (a held call's decision)\n%s", cmd, f.Decision, eventsUsage)
	}
	// The text output prints a type without its "sluice." prefix: a type
	// as printed (no dot) is that type, not one that never exists.
	if f.Type != "" && !strings.Contains(f.Type, ".") {
		f.Type = "sluice." + f.Type
	}
	now := time.Now()
	var err error
	if f.Since, err = parseTime(*since, now); err != nil {
		return fmt.Errorf("events %s: --since: %w", cmd, err)
	}
	if f.Until, err = parseTime(*until, now); err != nil {
		return fmt.Errorf("events %s: --until: %w", cmd, err)
	}
	// A negative limit meant no limit at all, as if none had been given.
	limitSet := false
	fs.Visit(func(fl *flag.Flag) { limitSet = limitSet || fl.Name == "limit" })
	switch {
	case *limit < 0:
		return fmt.Errorf("events %s: --limit %d: want 0 (no limit) or more\n%s", cmd, *limit, eventsUsage)
	case limitSet:
		f.Limit = *limit
	case cmd == "tail":
		f.Limit = 10
	}

	st, err := Open(*db, Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("events %s: %w (no gateway has recorded events there yet, or the gateway's data_dir is elsewhere: pass --config with its config, or --db)", cmd, err)
	}
	defer st.Close()

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	show := func(e telemetry.Event) error {
		if *asJSON {
			return writeJSONLine(out, e)
		}
		return writeText(out, e)
	}
	switch cmd {
	case "export":
		return st.Export(ctx, out, f)
	case "query":
		return st.Scan(ctx, f, show)
	}
	// tail: flush after every event so a pipe sees it at once.
	return st.Tail(ctx, f, func(e telemetry.Event) error {
		if err := show(e); err != nil {
			return err
		}
		return out.Flush()
	})
}

// parseTime reads an RFC 3339 time, a date, or a duration (or a number
// of days, 7d) meaning that long before now.
func parseTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	// Days, as sluice recommend --since takes them: 7d.
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 && days <= 100*366 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (2025-05-01T12:00:00Z, 2025-05-01) or a duration ago (1h30m, 7d)", s)
}

func writeJSONLine(w io.Writer, e telemetry.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(invisible.AppendJSON(nil, b), '\n')
	_, err = w.Write(b)
	return err
}

// writeText prints one event per line: time (UTC), type, decision and reason,
// then who and what as key=value pairs.
func writeText(w io.Writer, e telemetry.Event) error {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteByte(' ')
	b.WriteString(strings.TrimPrefix(e.Type, "sluice."))
	for _, kv := range [][2]string{
		{"decision", e.Decision}, {"reason", e.Reason}, {"agent", e.Agent}, {"session", e.Session},
		{"upstream", e.Upstream}, {"tool", e.Tool}, {"txn", e.TxnID},
	} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], quote(kv[1]))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// quote quotes values with spaces or quotes so a line stays parseable,
// and those with a blank (invisible.Blank: U+2800, which Go calls
// printable) so that alice+U+2800 cannot read as alice.
func quote(s string) string {
	if strings.ContainsAny(s, " \t\n\"=") || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || invisible.Is(r) || invisible.Blank(r) }) >= 0 {
		// %q escapes what is not printable: a name an agent chose must
		// not reach the operator's terminal as control sequences. What
		// Go calls printable but shows as nothing (a variation selector:
		// "ali\ufe0fce" reads as alice) is spelt out too.
		return invisible.SpellOut(fmt.Sprintf("%q", s))
	}
	return s
}

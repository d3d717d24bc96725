package audit

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

func TestEventsCLI(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close() // the CLI reads while the writer is open, as with a running gateway
	appendAll(t, st, sample())
	ctx := context.Background()

	tests := []struct {
		name      string
		args      []string
		wantLines int
		want      []string // substrings of the output
		notWant   []string
	}{
		{"query all", []string{"query"}, 5, []string{"policy_enforced decision=deny reason=tool_denied agent=alice", "breaker_state_changed upstream=github"}, nil},
		{"query agent", []string{"query", "--agent", "bob"}, 1, []string{"txn=txn-2"}, []string{"alice"}},
		{"query decision json", []string{"query", "--decision=deny", "--json"}, 1, []string{`"type":"sluice.policy_enforced"`, `"rule_id":"static.deny"`}, []string{"ghp_secret"}},
		{"query tool and since", []string{"query", "--tool", "read_file", "--since", "2025-05-01T12:00:02Z"}, 1, []string{"txn=txn-3"}, nil},
		{"query until", []string{"query", "--until", "2025-05-01T12:00:01Z", "--type", "sluice.intent_classified"}, 1, []string{"intent_classified"}, nil},
		{"query type as printed", []string{"query", "--type", "breaker_state_changed"}, 1, []string{"breaker_state_changed upstream=github"}, nil},
		{"query session limit", []string{"query", "--session", "s1", "--limit", "1"}, 1, []string{"txn=txn-1"}, nil},
		{"export", []string{"export", "--upstream", "fs"}, 2, []string{`"txn_id":"txn-2"`, `"txn_id":"txn-3"`}, nil},
		{"export txn", []string{"export", "--txn", "txn-1"}, 2, []string{`"capability_class_verdict":"dev.issues"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append(tt.args, "--db", path)
			if err := RunEventsCLI(ctx, args, &out); err != nil {
				t.Fatalf("RunEventsCLI(%q): %v", args, err)
			}
			s := out.String()
			if n := strings.Count(s, "\n"); n != tt.wantLines {
				t.Errorf("got %d lines, want %d:\n%s", n, tt.wantLines, s)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(s, w) {
					t.Errorf("output has %q:\n%s", w, s)
				}
			}
		})
	}

	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"query", "--since", "yesterday-ish", "--db", path},
		{"query", "--bogus"},
		{"query", "--db", path + ".missing"},
	} {
		if err := RunEventsCLI(ctx, args, &bytes.Buffer{}); err == nil {
			t.Errorf("RunEventsCLI(%q): got nil error, want one", args)
		}
	}
}

// lineWriter is a stdout that reports each line as it is written.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // incomplete: keep it for the next Write
			return len(p), nil
		}
		w.lines <- line
	}
}

func TestEventsCLITail(t *testing.T) {
	st, path := openTest(t, Options{Sync: true, PollInterval: 10 * time.Millisecond})
	defer st.Close()
	appendAll(t, st, sample())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &lineWriter{lines: make(chan string, 100)}
	done := make(chan error, 1)
	go func() {
		done <- RunEventsCLI(ctx, []string{"tail", "--db", path, "--agent", "alice", "--limit", "1", "--json"}, w)
	}()

	if line := <-w.lines; !strings.Contains(line, `"txn_id":"txn-3"`) {
		t.Errorf("first tail line: got %s, want the last existing event of alice (txn-3)", line)
	}
	// Written by another Store, as by a gateway in another process: the
	// CLI's read-only store finds it by polling.
	if err := st.Append(ctx, telemetry.Event{Type: "sluice.test", Agent: "alice", TxnID: "txn-new"}); err != nil {
		t.Fatal(err)
	}
	if line := <-w.lines; !strings.Contains(line, `"txn_id":"txn-new"`) {
		t.Errorf("followed line: got %s, want txn-new", line)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tail: %v", err)
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2025-04-30T10:00:00Z", time.Date(2025, 4, 30, 10, 0, 0, 0, time.UTC)},
		{"1h30m", now.Add(-90 * time.Minute)},
		{"2025-04-30", time.Date(2025, 4, 30, 0, 0, 0, 0, time.Local)},
		// Days, as sluice recommend --since takes them.
		{"7d", now.Add(-7 * 24 * time.Hour)},
	}
	for _, tt := range tests {
		got, err := parseTime(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseTime(%q): got %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"d", "-1d", "1.5d", "7dd", "99999999999d"} {
		if got, err := parseTime(bad, now); err == nil {
			t.Errorf("parseTime(%q): got %v, want an error", bad, got)
		}
	}
}

// --decision held (or denied, approved) matched no event and printed
// nothing, as if no call had been made; it is refused, naming the three.
func TestEventsCLIDecisionWord(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	appendAll(t, st, sample())
	for _, d := range []string{"held", "denied", "Deny"} {
		var out bytes.Buffer
		err := RunEventsCLI(context.Background(), []string{"query", "--decision", d, "--db", path}, &out)
		if err == nil || !strings.Contains(err.Error(), "want allow, deny or require_approval") {
			t.Errorf("--decision %s: got %v, output %q; want an error naming the decisions", d, err, out.String())
		}
	}
}

// --limit -5 printed every event, as if no limit had been given: a
// negative limit is refused, naming the flag, for every command.
func TestEventsCLINegativeLimit(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	appendAll(t, st, sample())
	for _, cmd := range []string{"query", "export", "tail"} {
		for _, n := range []string{"-5", "-1"} {
			ctx, cancel := context.WithCancel(context.Background())
			if cmd == "tail" {
				cancel() // tail would follow; it must not get that far
			}
			var out bytes.Buffer
			err := RunEventsCLI(ctx, []string{cmd, "--limit", n, "--db", path}, &out)
			if err == nil || !strings.Contains(err.Error(), "--limit "+n) || out.Len() > 0 {
				t.Errorf("%s --limit %s: got %v, output %q; want an error naming --limit and nothing printed", cmd, n, err, out.String())
			}
			cancel()
		}
	}
}

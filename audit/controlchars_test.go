package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/sluicehq/sluice/telemetry"
)

// A tool name is the agent's to choose. In `sluice events query` it must
// not reach the operator's terminal as control characters: ESC sequences
// and a carriage return can erase or rewrite the line of a denied call.
func TestEventsTextNoControlCharacters(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	// Clears this line and the one above, then writes a benign-looking
	// remainder: the denial is gone from the screen.
	evil := "x\x1b[2K\x1b[1A\x1b[2K\rlooks_fine"
	appendAll(t, st, []telemetry.Event{telemetry.PolicyEnforcement{
		Time: t0, TxnID: "txn-evil", Agent: "mallory", Upstream: "fs", Tool: evil, Decision: "deny", Reason: "default_deny",
	}.Event()})
	var out bytes.Buffer
	if err := RunEventsCLI(context.Background(), []string{"query", "--db", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(out.String(), "\n")
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("the text output carries control character %U from the tool name: %q", r, s)
		}
	}
}

// JSON output (query --json, tail --json, export) goes to the terminal as
// often as to a file. encoding/json escapes control characters but leaves
// format characters as they are: a right-to-left override or an isolate in
// an agent's name reorders the rest of the line on the operator's screen,
// and a zero-width space makes a name read as another agent's. They are
// written as \u escapes, which decode to the same event.
func TestEventsJSONNoFormatCharacters(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	agent := "ali\u200bce\u202e\u2066\u009b"
	tool := "x\u202egnp.exe\U000E0041" // a tag character: outside the BMP
	appendAll(t, st, []telemetry.Event{telemetry.PolicyEnforcement{
		Time: t0, TxnID: "txn-evil", Agent: agent, Upstream: "fs", Tool: tool, Decision: "deny", Reason: "default_deny",
	}.Event()})
	for _, args := range [][]string{{"query", "--json"}, {"export"}} {
		var out bytes.Buffer
		if err := RunEventsCLI(context.Background(), append(args, "--db", path), &out); err != nil {
			t.Fatal(err)
		}
		for _, r := range strings.TrimSuffix(out.String(), "\n") {
			if !unicode.IsPrint(r) && r != ' ' {
				t.Errorf("events %s: the output carries %U from the agent's or tool's name: %q", args[0], r, out.String())
				break
			}
		}
		var got []telemetry.Event
		if err := ReadJSONL(&out, func(e telemetry.Event) error { got = append(got, e); return nil }); err != nil {
			t.Fatalf("events %s: %v", args[0], err)
		}
		if len(got) != 1 || got[0].Agent != agent || got[0].Tool != tool {
			t.Errorf("events %s read back: %+v, want agent %q tool %q", args[0], got, agent, tool)
		}
	}
}
